//! The pull simulator's clients: job arrivals and sizes, task creation,
//! submission (split into packets, one request per task for R2P2) and
//! resubmission after a timeout or an error packet.

use super::*;

impl Sim<'_> {
    pub(super) fn job_size(&mut self) -> u32 {
        let w = &self.cfg.workload;
        match w.arrival {
            Arrival::Poisson | Arrival::ClosedLoop => w.job_tasks,
            Arrival::Bursty => {
                if !self.rng_size.chance(w.burst_fraction) {
                    return 1;
                }
                // Geometric on {1, 2, ...} with mean burst_mean_tasks, capped.
                let p = 1.0 / w.burst_mean_tasks;
                let g = if p >= 1.0 {
                    1.0
                } else {
                    (self.rng_size.unit_open0().ln() / (1.0 - p).ln()).ceil()
                };
                (g.max(1.0) as u64).min(w.burst_max_tasks as u64) as u32
            }
        }
    }

    pub(super) fn arrival(&mut self, now: u64) {
        let total = self.cfg.workload.tasks;
        let remaining = total - self.tasks.len() as u64;
        let size = (self.job_size() as u64).min(remaining);
        self.new_job(now, size);
        if (self.tasks.len() as u64) < total {
            let gap = self.interarrival();
            self.q.at(now + gap, Ev::Arrival);
        }
    }

    /// Creates the next `size` tasks as one job and submits it.
    pub(super) fn new_job(&mut self, now: u64, size: u64) {
        let total = self.cfg.workload.tasks;
        let first = self.tasks.len() as u64;
        let nodes = self.cfg.cluster.nodes;
        // `job_attributes`: the job's first task draws the service time and
        // priority its other tasks share (the authors' trace replay gives a
        // job one runTime and one priority); otherwise every task draws its
        // own. Same draws in the same order for the first task either way.
        let shared = self.cfg.workload.job_attributes;
        let mut job: Option<(u64, u8)> = None;
        for idx in first..first + size {
            let (service, priority) = match job {
                Some(attrs) => attrs,
                None => {
                    let (service, _) = self.sampler.sample(&mut self.rng_service);
                    let priority = if self.prio_cum.is_empty() {
                        1
                    } else {
                        let u = self.rng_prio.unit();
                        self.prio_cum.iter().position(|&c| u < c).unwrap_or(0) as u8 + 1
                    };
                    if shared {
                        job = Some((service, priority));
                    }
                    (service, priority)
                }
            };
            let data_node = if self.cfg.workload.locality.is_some() {
                self.rng_data.below(nodes) as u16
            } else {
                u16::MAX
            };
            let phase = if self.cfg.workload.resource_phases {
                (idx * 3 / total) as u8
            } else {
                0
            };
            let props = if self.cfg.workload.resource_phases {
                // Phase 0 needs A, 1 needs B, 2 needs C (§8.5).
                1u64 << phase
            } else if data_node != u16::MAX {
                TaskInfo::new(0).with_local_nodes(&[data_node]).props
            } else {
                0
            };
            self.tasks.push(Task {
                submit: now,
                service,
                first_start: NONE,
                done_at_executor: false,
                priority,
                data_node,
                props,
                phase,
            });
            self.tracker.submit(Nanos::new(now), Some(Nanos::new(now)));
            if idx >= self.warmup {
                self.m.submitted += 1;
            }
            self.m.note_arrival(phase, now);
        }
        self.submit(now, first, first + size);
        self.jobs += 1;
        if self.tasks.len() as u64 == total {
            self.m.last_arrival_ns = now;
            self.m.window_end_decisions = self.m.decisions;
        }
    }

    pub(super) fn task_info(&self, id: u64) -> TaskInfo {
        let t = &self.tasks[id as usize];
        TaskInfo {
            id,
            fn_id: 0,
            priority: t.priority,
            fn_par: self.attempt(id) as u64,
            props: t.props,
        }
    }

    /// Sends tasks `lo..hi` (one job) from their client.
    pub(super) fn submit(&mut self, now: u64, lo: u64, hi: u64) {
        let client = (self.jobs % self.cfg.client.clients as u64) as u32;
        for id in lo..hi {
            let (at, send) = self.tracker.deadline(id as u32).expect("a pending task");
            self.q.at(at.get(), Ev::Timeout(id, send));
        }
        match self.policy {
            PullPolicy::R2p2Recirc => {
                for id in lo..hi {
                    let task = self.task_info(id);
                    self.send_pull(now + self.link, 0, PullInput::Request { client, task });
                }
            }
            PullPolicy::RackschedNodes => {
                for id in lo..hi {
                    let meta = TaskMeta {
                        id: rack_id(id, self.attempt(id)),
                        first: true,
                        last: true,
                        idle_selected: false,
                        upstream: 0,
                        class: 0,
                    };
                    self.q.at(now + self.link, Ev::Rack(Input::Task(meta)));
                }
            }
            PullPolicy::Sparrow => {
                // Jobs go round robin over the scheduler hosts. (Client `c`
                // submits jobs c, c + clients, ...; `(jobs + client) % n`
                // sent every job to scheduler 0 whenever `clients` is even
                // and n = 2, so two Sparrows behaved as one.)
                let n = self.cfg.sparrow.schedulers as u64;
                let s = (self.jobs % n) as u32;
                self.in_packets(lo, hi, |e, tasks| {
                    e.sparrow_jobs += 1;
                    let job = e.sparrow_jobs;
                    let input = PullInput::JobSubmission(JobSubmission { client, job, tasks });
                    e.send_pull(now + e.sched_link, s, input);
                });
            }
            _ => self.in_packets(lo, hi, |e, tasks| {
                let job = e.packets.len() as u64;
                e.packets.push(tasks);
                let input = PullInput::JobSubmission(JobSubmission { client, job, tasks });
                e.send_pull(now + e.sched_link, 0, input);
            }),
        }
    }

    /// Tasks `lo..hi` in job_submission packets of at most
    /// `MAX_TASKS_PER_PACKET`, each handed to `send` (§4.3 "Handling Large
    /// Jobs": a job larger than a packet is split into several).
    fn in_packets(&mut self, lo: u64, hi: u64, mut send: impl FnMut(&mut Self, TaskList)) {
        let mut id = lo;
        while id < hi {
            let end = (id + MAX_TASKS_PER_PACKET as u64).min(hi);
            let mut tasks = TaskList::new();
            for i in id..end {
                tasks.push(self.task_info(i));
            }
            send(self, tasks);
            id = end;
        }
    }

    /// The copy of task `id` in flight, from 0 (FN_PAR, `send_of`).
    fn attempt(&self, id: u64) -> u32 {
        self.tracker.sends(id as u32).expect("a submitted task") - 1
    }

    /// Sends task `id` again: the tracker counted the new send (a timeout
    /// or a return's backoff passed).
    pub(super) fn resubmit(&mut self, now: u64, id: u64) {
        self.m.resubmissions += 1;
        self.submit(now, id, id + 1);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The (service, priority) of each task of the first `jobs` jobs.
    fn jobs(shared: bool, jobs: usize) -> Vec<Vec<(u64, u8)>> {
        let mut cfg = PullConfig::from_toml(
            r#"
seed = 5
policy = "draconis-priority"
[workload]
service = { kind = "exp", mean_us = 500 }
tasks = 5000
arrival = "bursty"
burst_fraction = 1.0
burst_mean_tasks = 20
priority_weights = [1, 1, 1, 1]
"#,
        )
        .expect("config");
        cfg.workload.job_attributes = shared;
        let sampler = cfg
            .workload
            .service
            .build_relative_to(Path::new("."))
            .expect("sampler");
        let mut sim = Sim::new(&cfg, sampler, PullPolicy::DraconisPriority, 0.5).expect("sim");
        (0..jobs)
            .map(|_| {
                let first = sim.tasks.len();
                let size = sim.job_size() as u64;
                sim.new_job(0, size);
                sim.tasks[first..]
                    .iter()
                    .map(|t| (t.service, t.priority))
                    .collect()
            })
            .collect()
    }

    /// `job_attributes`: every task of a job has the job's service time and
    /// priority, and jobs differ; without it the tasks of a job draw their
    /// own (the default, unchanged: its first task draws as before).
    #[test]
    fn job_attributes_are_shared_by_a_jobs_tasks() {
        let shared = jobs(true, 30);
        let own = jobs(false, 30);
        assert!(shared.iter().filter(|j| j.len() > 1).count() > 10);
        for j in &shared {
            assert!(
                j.iter().all(|a| *a == j[0]),
                "one job's tasks differ: {j:?}"
            );
        }
        let firsts: std::collections::BTreeSet<u64> = shared.iter().map(|j| j[0].0).collect();
        assert!(firsts.len() > 25, "jobs share a service time: {firsts:?}");
        assert!(
            own.iter()
                .filter(|j| j.iter().any(|a| a.0 != j[0].0))
                .count()
                > 10,
            "per-task draws give a job's tasks their own service times"
        );
        assert_eq!(
            shared[0][0], own[0][0],
            "the first task draws alike either way"
        );
    }
}
