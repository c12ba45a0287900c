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
//! * Multi-queue (RackSched §3.6): with C > 1 request types a node keeps one
//!   queue per type, counts outstanding requests per type, and its reply
//!   reports the count of the completed request's type. Which queue a freed
//!   core serves is not specified by RackSched; Shinjuku (NSDI'19), whose
//!   dispatcher RackSched's servers run, picks among per-type queues by each
//!   head's queueing delay relative to its type's latency target. RackSched
//!   gives no targets, so we make a type's target proportional to its mean
//!   service time: the freed core takes the head with the largest
//!   `waited / mean service of its type`, ties to the lower type. (Picking the
//!   longest-waiting head instead would serve exactly the order of one FIFO
//!   queue, making per-server multi-queue a no-op.) Multi-queue runs every
//!   node event by event (cFCFS is processor sharing with an endless slice),
//!   as the next task depends on the queues when a core frees.
//!
//! Every node also tracks its outstanding work, the summed service time of
//! its outstanding requests (per type with multi-queue), which RackSched's
//! INT3 tracking (§4.6) reports in place of the count.
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
    /// Tasks left at the node (queued + running), the qlen a reply reports;
    /// with multi-queue, those of the finished task's type.
    pub qlen: u32,
    /// Summed service time (ns) of the tasks `qlen` counts (INT3's LOAD).
    pub work: u64,
}

/// A task waiting in an event-driven queue.
#[derive(Clone, Copy, Debug)]
struct Waiting {
    task: u32,
    remaining: u64,
    /// First start of service, `NOT_STARTED` before it.
    started: u64,
    /// When it (re-)entered the queue, for the multi-queue pick.
    enqueued: u64,
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
    /// Queues per node: 1, or the number of request types with multi-queue.
    queues: usize,
    /// Multi-queue pick weights: each type's mean service time in ns (>= 1).
    type_mean_ns: Vec<u64>,
    outstanding: Vec<u32>,
    /// Per (node, queue): outstanding tasks (multi-queue only, else empty).
    queue_outstanding: Vec<u32>,
    /// Per (node, queue): summed service time of outstanding tasks.
    work: Vec<u64>,
    /// Per task slot: (service ns, queue), set on arrival.
    task_info: Vec<(u64, u32)>,
    epoch: Vec<u32>,
    alive: Vec<bool>,
    cores: Vec<u32>,
    /// FCFS: time each core frees, flat, `core_start[n]..core_start[n+1]`.
    core_free: Vec<u64>,
    core_start: Vec<u32>,
    /// Event-driven nodes (PS, multi-queue): per (node, queue) waiting tasks
    /// and per node busy cores.
    ps_queue: Vec<VecDeque<Waiting>>,
    ps_running: Vec<u32>,
    /// Longest run before a task goes back to its queue: the PS slice, or
    /// `u64::MAX` for event-driven cFCFS.
    slice_ns: u64,
}

impl Nodes {
    /// One queue per node.
    pub fn new(cores_per_node: &[u32], discipline: Discipline) -> Self {
        Self::with_queues(cores_per_node, discipline, &[1.0])
    }

    /// One queue per request type (RackSched §3.6) when `type_mean_ns` has
    /// more than one entry: type `c`'s tasks queue apart, and its mean service
    /// time weighs its head's wait when a core frees (see the module docs).
    pub fn with_queues(
        cores_per_node: &[u32],
        discipline: Discipline,
        type_mean_ns: &[f64],
    ) -> Self {
        assert!(!type_mean_ns.is_empty(), "at least one queue per node");
        let mut core_start = Vec::with_capacity(cores_per_node.len() + 1);
        let mut total = 0u32;
        for &c in cores_per_node {
            assert!(c > 0, "a node has at least one core");
            core_start.push(total);
            total += c;
        }
        core_start.push(total);
        let n = cores_per_node.len();
        let queues = type_mean_ns.len();
        let slice_ns = match discipline {
            Discipline::ProcessorSharing { slice_ns } => slice_ns,
            Discipline::Fcfs => u64::MAX,
        };
        let event_driven = slice_ns != u64::MAX || queues > 1;
        Nodes {
            queues,
            type_mean_ns: type_mean_ns
                .iter()
                .map(|&m| (m.round() as u64).max(1))
                .collect(),
            outstanding: vec![0; n],
            queue_outstanding: if queues > 1 {
                vec![0; n * queues]
            } else {
                Vec::new()
            },
            work: vec![0; n * queues],
            task_info: Vec::new(),
            epoch: vec![0; n],
            alive: vec![true; n],
            cores: cores_per_node.to_vec(),
            core_free: vec![0; total as usize],
            core_start,
            ps_queue: if event_driven {
                (0..n * queues).map(|_| VecDeque::new()).collect()
            } else {
                Vec::new()
            },
            ps_running: if event_driven { vec![0; n] } else { Vec::new() },
            slice_ns,
        }
    }

    #[inline]
    fn event_driven(&self) -> bool {
        self.slice_ns != u64::MAX || self.queues > 1
    }

    /// The (node, queue) index of a task of `class` at node `n`.
    #[inline]
    fn queue_of(&self, n: usize, class: u8) -> usize {
        if self.queues > 1 {
            debug_assert!((class as usize) < self.queues, "class {class} has no queue");
            n * self.queues + (class as usize).min(self.queues - 1)
        } else {
            n
        }
    }

    /// Outstanding tasks and work a reply from queue `q` of node `n` reports.
    #[inline]
    fn reported(&self, n: usize, q: usize) -> (u32, u64) {
        let count = if self.queues > 1 {
            self.queue_outstanding[q]
        } else {
            self.outstanding[n]
        };
        (count, self.work[q])
    }

    /// Outstanding work (ns) at `node` over all its queues.
    pub fn work(&self, node: u32) -> u64 {
        let n = node as usize;
        self.work[n * self.queues..(n + 1) * self.queues]
            .iter()
            .sum()
    }

    /// Outstanding tasks of type `class` at `node` (all of them with one queue).
    pub fn class_qlen(&self, node: u32, class: u8) -> u32 {
        let n = node as usize;
        self.reported(n, self.queue_of(n, class)).0
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

    /// A task of type `class` arrives at `node`. Returns the event to
    /// schedule and its time, if any (event-driven tasks that find all cores
    /// busy wait without an event).
    pub fn arrive(
        &mut self,
        now: u64,
        node: u32,
        task: u32,
        service: u64,
        class: u8,
    ) -> Option<(u64, NodeEvent)> {
        let n = node as usize;
        debug_assert!(self.alive[n]);
        let q = self.queue_of(n, class);
        self.outstanding[n] += 1;
        if self.queues > 1 {
            self.queue_outstanding[q] += 1;
        }
        self.work[q] += service;
        let t = task as usize;
        if t >= self.task_info.len() {
            self.task_info.resize(t + 1, (0, 0));
        }
        self.task_info[t] = (service, q as u32);
        let epoch = self.epoch[n];
        if !self.event_driven() {
            let cores =
                &mut self.core_free[self.core_start[n] as usize..self.core_start[n + 1] as usize];
            let (idx, free) = cores
                .iter()
                .enumerate()
                .min_by_key(|(_, &t)| t)
                .map(|(i, &t)| (i, t))
                .unwrap();
            let start = now.max(free);
            let finish = start + service;
            cores[idx] = finish;
            return Some((
                finish,
                NodeEvent::SliceEnd {
                    node,
                    epoch,
                    task,
                    remaining: 0,
                    started: start,
                },
            ));
        }
        if self.ps_running[n] < self.cores[n] {
            self.ps_running[n] += 1;
            Some(Self::slice(
                now,
                node,
                epoch,
                task,
                service,
                now,
                self.slice_ns,
            ))
        } else {
            self.ps_queue[q].push_back(Waiting {
                task,
                remaining: service,
                started: NOT_STARTED,
                enqueued: now,
            });
            None
        }
    }

    /// The queue a freed core of node `n` serves next, if any task waits: the
    /// only one, or with multi-queue the head with the largest wait relative
    /// to its type's mean service time (module docs), ties to the lower type.
    fn next_queue(&self, now: u64, n: usize) -> Option<usize> {
        let base = n * self.queues;
        if self.queues == 1 {
            return (!self.ps_queue[base].is_empty()).then_some(base);
        }
        let mut best: Option<(usize, u128, u128)> = None;
        for c in 0..self.queues {
            let Some(head) = self.ps_queue[base + c].front() else {
                continue;
            };
            let waited = (now - head.enqueued) as u128;
            let mean = self.type_mean_ns[c] as u128;
            // waited / mean > best_waited / best_mean, in integers.
            if best.is_none_or(|(_, bw, bm)| waited * bm > bw * mean) {
                best = Some((base + c, waited, mean));
            }
        }
        best.map(|(q, _, _)| q)
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

    /// Handle a node event. `next` receives an event to schedule (event-driven
    /// nodes only: PS and multi-queue).
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
        let (service, q) = self.task_info[task as usize];
        let q = q as usize;
        let finished = remaining == 0;
        if self.event_driven() {
            if !finished {
                self.ps_queue[q].push_back(Waiting {
                    task,
                    remaining,
                    started,
                    enqueued: now,
                });
            }
            // The core that just freed takes the next waiting task.
            match self.next_queue(now, n) {
                Some(next_q) => {
                    let w = self.ps_queue[next_q].pop_front().expect("non-empty queue");
                    let first = if w.started == NOT_STARTED {
                        now
                    } else {
                        w.started
                    };
                    *next = Some(Self::slice(
                        now,
                        node,
                        epoch,
                        w.task,
                        w.remaining,
                        first,
                        self.slice_ns,
                    ));
                }
                None => self.ps_running[n] -= 1,
            }
        }
        if !finished {
            return Outcome::Continue;
        }
        self.outstanding[n] -= 1;
        if self.queues > 1 {
            self.queue_outstanding[q] -= 1;
        }
        self.work[q] -= service;
        let (qlen, work) = self.reported(n, q);
        Outcome::Finished(Finished {
            task,
            started,
            qlen,
            work,
        })
    }

    /// The node fails: returns the tasks waiting in its queues (tasks in
    /// service surface later as [`Outcome::Lost`] from their pending events).
    pub fn fail(&mut self, node: u32, lost: &mut Vec<u32>) {
        let n = node as usize;
        if !self.alive[n] {
            return;
        }
        self.alive[n] = false;
        self.epoch[n] = self.epoch[n].wrapping_add(1);
        self.outstanding[n] = 0;
        let queues = n * self.queues..(n + 1) * self.queues;
        self.work[queues.clone()].iter_mut().for_each(|w| *w = 0);
        if self.queues > 1 {
            self.queue_outstanding[queues.clone()]
                .iter_mut()
                .for_each(|c| *c = 0);
        }
        if self.event_driven() {
            for q in queues {
                lost.extend(self.ps_queue[q].drain(..).map(|w| w.task));
            }
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
        self.work.extend(std::iter::repeat_n(0, self.queues));
        if self.queues > 1 {
            self.queue_outstanding
                .extend(std::iter::repeat_n(0, self.queues));
        }
        if self.event_driven() {
            for _ in 0..self.queues {
                self.ps_queue.push(VecDeque::new());
            }
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
        let typed: Vec<(u64, u64, u8)> = arrivals.iter().map(|&(t, s)| (t, s, 0)).collect();
        run_typed(nodes, &typed)
            .into_iter()
            .map(|(f, now)| (f.task, now))
            .collect()
    }

    /// Arrivals `(time, service, type)` at node 0; completions in order.
    fn run_typed(nodes: &mut Nodes, arrivals: &[(u64, u64, u8)]) -> Vec<(Finished, u64)> {
        let mut q = crate::queue::EventQueue::new();
        for (i, &(t, s, c)) in arrivals.iter().enumerate() {
            q.at(t, (true, i as u32, s, c, None));
        }
        let mut done = Vec::new();
        while let Some((now, (is_arrival, task, s, c, ev))) = q.pop() {
            if is_arrival {
                if let Some((t, e)) = nodes.arrive(now, 0, task, s, c) {
                    q.at(t, (false, task, 0, 0, Some(e)));
                }
            } else {
                let mut next = None;
                if let Outcome::Finished(f) = nodes.on_event(now, ev.unwrap(), &mut next) {
                    done.push((f, now));
                }
                if let Some((t, e)) = next {
                    let NodeEvent::SliceEnd { task, .. } = e;
                    q.at(t, (false, task, 0, 0, Some(e)));
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

    #[test]
    fn multi_queue_serves_the_head_that_waited_longest_relative_to_its_type() {
        // One core; types with means 10 and 100 ns. A (long) runs 0..100; B
        // (long) waits from 1, C (short) from 2. At 100 C has waited 98/10,
        // B 99/100 of its type's mean, so C goes first although B is older.
        let mut nodes = Nodes::with_queues(&[1], Discipline::Fcfs, &[10.0, 100.0]);
        let done = run_typed(&mut nodes, &[(0, 100, 1), (1, 100, 1), (2, 10, 0)]);
        let order: Vec<(u32, u64)> = done.iter().map(|(f, t)| (f.task, *t)).collect();
        assert_eq!(order, vec![(0, 100), (2, 110), (1, 210)]);
        // Replies report the finished task's type: A leaves B (100 ns) in
        // type 1; C leaves nothing of type 0; B leaves nothing.
        let reported: Vec<(u32, u64)> = done.iter().map(|(f, _)| (f.qlen, f.work)).collect();
        assert_eq!(reported, vec![(1, 100), (0, 0), (0, 0)]);
        assert_eq!(done[1].0.started, 100);
        // One FIFO queue serves B before C.
        let mut single = Nodes::new(&[1], Discipline::Fcfs);
        let fifo = run_to_completion(&mut single, &[(0, 100), (1, 100), (2, 10)]);
        assert_eq!(fifo, vec![(0, 100), (1, 200), (2, 210)]);
    }

    #[test]
    fn multi_queue_counts_and_work_per_type_while_tasks_wait() {
        let mut nodes = Nodes::with_queues(&[2], Discipline::Fcfs, &[50.0, 500.0]);
        for (task, service, class) in [(0, 500, 1), (1, 50, 0), (2, 50, 0), (3, 500, 1)] {
            nodes.arrive(0, 0, task, service, class);
        }
        assert_eq!(nodes.qlen(0), 4);
        assert_eq!((nodes.class_qlen(0, 0), nodes.class_qlen(0, 1)), (2, 2));
        assert_eq!(nodes.work(0), 1100);
        let mut lost = Vec::new();
        nodes.fail(0, &mut lost);
        assert_eq!(
            lost,
            vec![2, 3],
            "the two waiting tasks are lost with the node"
        );
        assert_eq!(
            (nodes.qlen(0), nodes.work(0), nodes.class_qlen(0, 1)),
            (0, 0, 0)
        );
    }

    /// With equal type means the pick is the oldest head, so event-driven
    /// multi-queue cFCFS must finish every task exactly when the closed-form
    /// FCFS (start = earliest free core) does.
    #[test]
    fn multi_queue_with_equal_means_matches_closed_form_cfcfs() {
        let mut rng = netsched_core::rng::Rng::new(7);
        let mut t = 0;
        let arrivals: Vec<(u64, u64, u8)> = (0..3_000)
            .map(|_| {
                t += 1 + rng.below(40) as u64;
                (t, 1 + rng.below(300) as u64, rng.below(3) as u8)
            })
            .collect();
        let mut multi = Nodes::with_queues(&[4], Discipline::Fcfs, &[100.0; 3]);
        let mut got: Vec<(u32, u64)> = run_typed(&mut multi, &arrivals)
            .iter()
            .map(|(f, now)| (f.task, *now))
            .collect();
        let mut fcfs = Nodes::new(&[4], Discipline::Fcfs);
        let plain: Vec<(u64, u64)> = arrivals.iter().map(|&(t, s, _)| (t, s)).collect();
        let mut want = run_to_completion(&mut fcfs, &plain);
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want);
        assert_eq!((multi.qlen(0), multi.work(0)), (0, 0));
    }

    #[test]
    fn single_queue_tracks_outstanding_work_for_int3() {
        let mut nodes = Nodes::new(&[1], Discipline::ProcessorSharing { slice_ns: 25 });
        let done = run_typed(&mut nodes, &[(0, 100, 0), (1, 10, 1), (2, 30, 0)]);
        // Single queue: a reply reports all tasks left and all their work.
        let reported: Vec<(u32, u32, u64)> =
            done.iter().map(|(f, _)| (f.task, f.qlen, f.work)).collect();
        assert_eq!(reported, vec![(1, 2, 130), (2, 1, 100), (0, 0, 0)]);
    }
}
