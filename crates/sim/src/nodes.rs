//! Execution at the nodes a leaf schedules to.
//!
//! A node is a set of cores with one intra-node discipline:
//! * FCFS over `c` cores (a Horus worker is a 1-core FCFS node; RackSched's
//!   cFCFS server is a `c`-core one). Service times are known when a task
//!   arrives, so the start and finish times are computed on arrival: the task
//!   takes the core that frees first, which is exactly centralized FCFS. One
//!   completion event per task, no per-node queue storage.
//! * Processor sharing approximated, as in RackSched §2, by round-robin with a
//!   fixed time slice (25 µs): a task runs for at most one slice, then goes to
//!   the back of the node's queue.
//!
//! A failed node bumps its epoch; completion events carrying an older epoch
//! are the tasks lost with it, and the engine counts them as aborted.

use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Discipline {
    Fcfs,
    ProcessorSharing { slice_ns: u64 },
}

/// Something the engine must schedule for the nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeEvent {
    /// A task finishes (FCFS), or a slice ends (PS) with `remaining` service left.
    SliceEnd {
        node: u32,
        epoch: u32,
        task: u32,
        remaining: u64,
        started: u64,
    },
}

/// A task that finished service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finished {
    pub task: u32,
    /// When it first started service (for waiting time).
    pub started: u64,
    /// Tasks left at the node (queued + running), the qlen a reply reports.
    pub qlen: u32,
}

pub enum Outcome {
    Finished(Finished),
    /// The node failed since this event was scheduled: the task is lost.
    Lost {
        task: u32,
    },
    /// A PS slice ended without finishing the task.
    Continue,
}

const NOT_STARTED: u64 = u64::MAX;

pub struct Nodes {
    discipline: Discipline,
    outstanding: Vec<u32>,
    epoch: Vec<u32>,
    alive: Vec<bool>,
    cores: Vec<u32>,
    /// FCFS: time each core frees, flat, `core_start[n]..core_start[n+1]`.
    core_free: Vec<u64>,
    core_start: Vec<u32>,
    /// PS: per-node run queue of (task, remaining, first start) and busy cores.
    ps_queue: Vec<VecDeque<(u32, u64, u64)>>,
    ps_running: Vec<u32>,
}

impl Nodes {
    pub fn new(cores_per_node: &[u32], discipline: Discipline) -> Self {
        let mut core_start = Vec::with_capacity(cores_per_node.len() + 1);
        let mut total = 0u32;
        for &c in cores_per_node {
            assert!(c > 0, "a node has at least one core");
            core_start.push(total);
            total += c;
        }
        core_start.push(total);
        let n = cores_per_node.len();
        let ps = matches!(discipline, Discipline::ProcessorSharing { .. });
        Nodes {
            discipline,
            outstanding: vec![0; n],
            epoch: vec![0; n],
            alive: vec![true; n],
            cores: cores_per_node.to_vec(),
            core_free: vec![0; total as usize],
            core_start,
            ps_queue: if ps {
                (0..n).map(|_| VecDeque::new()).collect()
            } else {
                Vec::new()
            },
            ps_running: if ps { vec![0; n] } else { Vec::new() },
        }
    }

    pub fn len(&self) -> usize {
        self.outstanding.len()
    }

    pub fn is_empty(&self) -> bool {
        self.outstanding.is_empty()
    }

    pub fn qlen(&self, node: u32) -> u32 {
        self.outstanding[node as usize]
    }

    pub fn queue_lengths(&self) -> &[u32] {
        &self.outstanding
    }

    pub fn alive(&self, node: u32) -> bool {
        self.alive[node as usize]
    }

    /// A task arrives at `node`. Returns the event to schedule and its time,
    /// if any (PS tasks that find all cores busy wait without an event).
    pub fn arrive(
        &mut self,
        now: u64,
        node: u32,
        task: u32,
        service: u64,
    ) -> Option<(u64, NodeEvent)> {
        let n = node as usize;
        debug_assert!(self.alive[n]);
        self.outstanding[n] += 1;
        let epoch = self.epoch[n];
        match self.discipline {
            Discipline::Fcfs => {
                let cores = &mut self.core_free
                    [self.core_start[n] as usize..self.core_start[n + 1] as usize];
                let (idx, free) = cores
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, &t)| t)
                    .map(|(i, &t)| (i, t))
                    .unwrap();
                let start = now.max(free);
                let finish = start + service;
                cores[idx] = finish;
                Some((
                    finish,
                    NodeEvent::SliceEnd {
                        node,
                        epoch,
                        task,
                        remaining: 0,
                        started: start,
                    },
                ))
            }
            Discipline::ProcessorSharing { slice_ns } => {
                if self.ps_running[n] < self.cores[n] {
                    self.ps_running[n] += 1;
                    Some(Self::slice(now, node, epoch, task, service, now, slice_ns))
                } else {
                    self.ps_queue[n].push_back((task, service, NOT_STARTED));
                    None
                }
            }
        }
    }

    fn slice(
        now: u64,
        node: u32,
        epoch: u32,
        task: u32,
        remaining: u64,
        started: u64,
        slice_ns: u64,
    ) -> (u64, NodeEvent) {
        let run = remaining.min(slice_ns);
        (
            now + run,
            NodeEvent::SliceEnd {
                node,
                epoch,
                task,
                remaining: remaining - run,
                started,
            },
        )
    }

    /// Handle a node event. `next` receives an event to schedule (PS only).
    pub fn on_event(
        &mut self,
        now: u64,
        ev: NodeEvent,
        next: &mut Option<(u64, NodeEvent)>,
    ) -> Outcome {
        let NodeEvent::SliceEnd {
            node,
            epoch,
            task,
            remaining,
            started,
        } = ev;
        let n = node as usize;
        if epoch != self.epoch[n] {
            return Outcome::Lost { task };
        }
        match self.discipline {
            Discipline::Fcfs => {
                self.outstanding[n] -= 1;
                Outcome::Finished(Finished {
                    task,
                    started,
                    qlen: self.outstanding[n],
                })
            }
            Discipline::ProcessorSharing { slice_ns } => {
                let queue = &mut self.ps_queue[n];
                let finished = remaining == 0;
                if !finished {
                    queue.push_back((task, remaining, started));
                }
                // The core that just freed takes the head of the queue.
                if let Some((t, rem, first)) = queue.pop_front() {
                    let first = if first == NOT_STARTED { now } else { first };
                    *next = Some(Self::slice(now, node, epoch, t, rem, first, slice_ns));
                } else {
                    self.ps_running[n] -= 1;
                }
                if finished {
                    self.outstanding[n] -= 1;
                    Outcome::Finished(Finished {
                        task,
                        started,
                        qlen: self.outstanding[n],
                    })
                } else {
                    Outcome::Continue
                }
            }
        }
    }

    /// The node fails: returns the tasks waiting in a PS queue (FCFS tasks
    /// surface later as [`Outcome::Lost`] from their pending events).
    pub fn fail(&mut self, node: u32, lost: &mut Vec<u32>) {
        let n = node as usize;
        if !self.alive[n] {
            return;
        }
        self.alive[n] = false;
        self.epoch[n] = self.epoch[n].wrapping_add(1);
        self.outstanding[n] = 0;
        if !self.ps_queue.is_empty() {
            lost.extend(self.ps_queue[n].drain(..).map(|(t, _, _)| t));
            self.ps_running[n] = 0;
        }
        let cores =
            &mut self.core_free[self.core_start[n] as usize..self.core_start[n + 1] as usize];
        cores.iter_mut().for_each(|c| *c = 0);
    }

    /// A new idle node with `cores` cores joins (workers added at run time).
    pub fn add_node(&mut self, cores: u32) -> u32 {
        let id = self.outstanding.len() as u32;
        self.outstanding.push(0);
        self.epoch.push(0);
        self.alive.push(true);
        self.cores.push(cores);
        let end = *self.core_start.last().unwrap();
        self.core_free
            .extend(std::iter::repeat_n(0, cores as usize));
        self.core_start.push(end + cores);
        if !self.ps_running.is_empty()
            || matches!(self.discipline, Discipline::ProcessorSharing { .. })
        {
            self.ps_queue.push(VecDeque::new());
            self.ps_running.push(0);
        }
        id
    }

    /// (max, mean) queue length over live nodes in `range`, for the imbalance metric.
    pub fn max_mean(&self, range: std::ops::Range<usize>) -> (u32, f64) {
        let mut max = 0;
        let mut sum = 0u64;
        let mut live = 0u64;
        for i in range {
            if self.alive[i] {
                let q = self.outstanding[i];
                max = max.max(q);
                sum += q as u64;
                live += 1;
            }
        }
        (
            max,
            if live == 0 {
                0.0
            } else {
                sum as f64 / live as f64
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_to_completion(nodes: &mut Nodes, arrivals: &[(u64, u64)]) -> Vec<(u32, u64)> {
        let mut q = crate::queue::EventQueue::new();
        for (i, &(t, s)) in arrivals.iter().enumerate() {
            q.at(t, (true, i as u32, s, None));
        }
        let mut done = Vec::new();
        while let Some((now, (is_arrival, task, s, ev))) = q.pop() {
            if is_arrival {
                if let Some((t, e)) = nodes.arrive(now, 0, task, s) {
                    q.at(t, (false, task, 0, Some(e)));
                }
            } else {
                let mut next = None;
                if let Outcome::Finished(f) = nodes.on_event(now, ev.unwrap(), &mut next) {
                    done.push((f.task, now));
                }
                if let Some((t, e)) = next {
                    let NodeEvent::SliceEnd { task, .. } = e;
                    q.at(t, (false, task, 0, Some(e)));
                }
            }
        }
        done
    }

    #[test]
    fn fcfs_two_cores_takes_earliest_free_core() {
        let mut nodes = Nodes::new(&[2], Discipline::Fcfs);
        let done = run_to_completion(&mut nodes, &[(0, 100), (0, 10), (0, 10), (0, 10)]);
        assert_eq!(done, vec![(1, 10), (2, 20), (3, 30), (0, 100)]);
        assert_eq!(nodes.qlen(0), 0);
    }

    #[test]
    fn processor_sharing_lets_short_task_overtake_long_one() {
        let mut nodes = Nodes::new(&[1], Discipline::ProcessorSharing { slice_ns: 25 });
        // Long task (100) first, short task (10) right after: RR slices of 25
        // finish the short task at 25 + 10 = 35, the long one at 110.
        let done = run_to_completion(&mut nodes, &[(0, 100), (1, 10)]);
        assert_eq!(done, vec![(1, 35), (0, 110)]);
    }
}
