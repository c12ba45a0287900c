//! The SPC port on the switch model against the implementation it replaced
//! (a vector of per-task structs, Alg. 1 in the paper's line order): the
//! same random sequence of requests, FINs, task ends and intervals gives
//! the same feedback and state, bit for bit. The flow simulator's
//! packet-level engine and UDP lab depended on these exact results.

use netsched_core::baraat::{SpcFeedback, SpcPort, SpcRequest};
use proptest::prelude::*;

#[allow(dead_code)]
mod reference {
    use super::{SpcFeedback, SpcRequest};

    /// One task's aggregate counters at a switch port (§4.3.1: "we only keep
    /// aggregate, per-task counters at the switches").
    #[derive(Clone, Debug, PartialEq)]
    pub struct TaskCounters {
        pub task_id: u64,
        /// Bytes reserved so far by the task's flows at this port: the proxy for
        /// task size (footnote 4: *all* prior reservations, not the current demand).
        pub bytes_reserved: f64,
        /// Sum of the current demands of the task's flows (bits/s).
        pub demand: f64,
        /// Number of the task's flows currently registered.
        pub flows: u32,
        /// Sum of the task's flows' current allocations AR (bits/s): what is
        /// still booked to the task in the port's A.
        pub allocated: f64,
        /// Marked once `bytes_reserved` exceeds the threshold; sticky.
        pub heavy: bool,
    }

    /// The §4.3.1 classifier of one switch port: tasks map one-to-one to priority
    /// classes in task-id order (FIFO), except that a heavy task shares its class
    /// with the task immediately after it (FIFO-LM). A class keeps absorbing the
    /// next task while its last member is heavy, so two heavy tasks in a row let
    /// a third, small task make progress too.
    #[derive(Clone, Debug, Default)]
    pub struct FifoLm {
        /// Tasks known at this port, sorted by task id (ascending = priority).
        tasks: Vec<TaskCounters>,
        /// Heavy threshold in bytes (§3.3: a percentile of historical task sizes).
        threshold: f64,
    }

    impl FifoLm {
        pub fn new(threshold_bytes: f64) -> Self {
            FifoLm {
                tasks: Vec::new(),
                threshold: threshold_bytes,
            }
        }

        pub fn threshold(&self) -> f64 {
            self.threshold
        }

        fn find(&self, task_id: u64) -> Result<usize, usize> {
            self.tasks.binary_search_by_key(&task_id, |t| t.task_id)
        }

        fn entry(&mut self, task_id: u64) -> &mut TaskCounters {
            let i = match self.find(task_id) {
                Ok(i) => i,
                Err(i) => {
                    self.tasks.insert(
                        i,
                        TaskCounters {
                            task_id,
                            bytes_reserved: 0.0,
                            demand: 0.0,
                            flows: 0,
                            allocated: 0.0,
                            heavy: false,
                        },
                    );
                    i
                }
            };
            &mut self.tasks[i]
        }

        /// A flow of `task_id` appears at this port.
        pub fn add_flow(&mut self, task_id: u64) {
            self.entry(task_id).flows += 1;
        }

        /// A flow of `task_id` ends. The task's counters stay until
        /// [`FifoLm::forget`]: bytes reserved accumulate over the task's life.
        pub fn remove_flow(&mut self, task_id: u64) {
            if let Ok(i) = self.find(task_id) {
                let t = &mut self.tasks[i];
                t.flows = t.flows.saturating_sub(1);
            }
        }

        /// The task is over (or its state timed out): drop its counters.
        /// Returns true if that changes another task's class: the task after
        /// it had it as its class's leader, or joins the class before it (a
        /// heavy task's). Dropping a light task that leads its own class
        /// changes no other class.
        pub fn forget(&mut self, task_id: u64) -> bool {
            let Ok(i) = self.find(task_id) else {
                return false;
            };
            let next = self.tasks.get(i + 1).map(|t| t.task_id);
            let before = next.and_then(|n| self.leader(n));
            self.tasks.remove(i);
            next.is_some() && next.and_then(|n| self.leader(n)) != before
        }

        /// Account `bytes` reserved by the task; returns true when this makes the
        /// task heavy.
        pub fn reserve(&mut self, task_id: u64, bytes: f64) -> bool {
            let thr = self.threshold;
            let t = self.entry(task_id);
            t.bytes_reserved += bytes;
            if !t.heavy && t.bytes_reserved > thr {
                t.heavy = true;
                return true;
            }
            false
        }

        pub fn counters(&self, task_id: u64) -> Option<&TaskCounters> {
            self.find(task_id).ok().map(|i| &self.tasks[i])
        }

        /// Tasks at this port in priority order.
        pub fn tasks(&self) -> &[TaskCounters] {
            &self.tasks
        }

        /// The class of every task, as (task_id, class index, leader id), in
        /// priority order. Tasks without flows still occupy their place: a task
        /// between stages keeps its position in the FIFO.
        pub fn classes(&self) -> impl Iterator<Item = (u64, usize, u64)> + '_ {
            let mut class = 0usize;
            let mut leader = 0u64;
            let mut prev_heavy = false;
            self.tasks.iter().enumerate().map(move |(i, t)| {
                if i == 0 || !prev_heavy {
                    if i > 0 {
                        class += 1;
                    }
                    leader = t.task_id;
                }
                prev_heavy = t.heavy;
                (t.task_id, class, leader)
            })
        }

        /// The id of the first task in `task_id`'s class: a priority key shared
        /// by every task of the class (lower = served first).
        pub fn leader(&self, task_id: u64) -> Option<u64> {
            self.classes()
                .find(|&(id, _, _)| id == task_id)
                .map(|(_, _, l)| l)
        }

        /// The time in ns until the earliest task not yet heavy crosses the
        /// threshold, if each task's bytes keep growing at `rate_of(task_id)`
        /// bits/s. Used by a fluid driver to schedule the re-classification.
        pub fn next_crossing_ns(&self, mut rate_of: impl FnMut(u64) -> f64) -> Option<f64> {
            let mut best: Option<f64> = None;
            for t in &self.tasks {
                if t.heavy {
                    continue;
                }
                let r = rate_of(t.task_id);
                if r > 0.0 {
                    let dt = ((self.threshold - t.bytes_reserved).max(0.0) * 8e9) / r;
                    best = Some(best.map_or(dt, |b: f64| b.min(dt)));
                }
            }
            best
        }
    }

    /// The SPC logic of one switch output port (Alg. 1), with per-task counters
    /// only. Capacity is a *virtual* capacity (footnote 5) that an RCP-style
    /// control loop raises when the link is under-used and lowers under queuing,
    /// which is how Alg. 1's equal split `ClassAvlBW / F_k` reaches a max-min
    /// allocation when some flows of the class demand less.
    #[derive(Clone, Debug)]
    pub struct SpcSwitch {
        /// Physical capacity (bits/s).
        pub capacity: f64,
        /// Virtual capacity used by Alg. 1 (bits/s).
        pub virtual_capacity: f64,
        /// Sum of current allocations A (bits/s).
        allocated: f64,
        /// RTT, used to turn a rate into bytes reserved for one interval.
        rtt_ns: u64,
        classifier: FifoLm,
    }

    impl SpcSwitch {
        pub fn new(capacity_bps: f64, rtt_ns: u64, heavy_threshold_bytes: f64) -> Self {
            SpcSwitch {
                capacity: capacity_bps,
                virtual_capacity: capacity_bps,
                allocated: 0.0,
                rtt_ns: rtt_ns.max(1),
                classifier: FifoLm::new(heavy_threshold_bytes),
            }
        }

        pub fn classifier(&self) -> &FifoLm {
            &self.classifier
        }

        pub fn allocated(&self) -> f64 {
            self.allocated
        }

        /// Alg. 1 for one packet of a flow.
        pub fn on_packet(&mut self, req: SpcRequest) -> SpcFeedback {
            // Line 1: return the previous allocation and demand.
            self.allocated = (self.allocated - req.prev_alloc).max(0.0);
            if req.new_flow {
                self.classifier.add_flow(req.task_id);
            }
            {
                let t = self.classifier.entry(req.task_id);
                t.demand = (t.demand - req.prev_demand).max(0.0);
                t.allocated = (t.allocated - req.prev_alloc).max(0.0);
            }
            // Line 2: k = Classifier(TaskID). Sum demands of higher classes (D_i,
            // i < k) and of the flow's own class without the flow (D_k), and the
            // number of flows in the class including this one (F_k).
            let classes: Vec<(u64, usize, u64)> = self.classifier.classes().collect();
            let k = classes
                .iter()
                .find(|c| c.0 == req.task_id)
                .map_or(0, |c| c.1);
            let mut higher = 0.0;
            let mut own = 0.0;
            let mut flows_k = 0u32;
            for (id, class, _) in classes {
                let Some(c) = self.classifier.counters(id) else {
                    continue;
                };
                if class < k {
                    higher += c.demand;
                } else if class == k {
                    own += c.demand;
                    flows_k += c.flows;
                } else {
                    break;
                }
            }
            let cap = self.virtual_capacity;
            // Line 3-9.
            let class_avl = (cap - higher).max(0.0);
            let avail_share = (class_avl - own).max(0.0);
            let nr = if avail_share >= req.demand {
                req.demand
            } else {
                class_avl / flows_k.max(1) as f64
            };
            // Line 10: AR = min(NR, C - A): bandwidth promised to others (e.g. a
            // lower-priority flow not yet preempted) is not handed out twice.
            let ar = nr.min((cap - self.allocated).max(0.0));
            // Line 12: update counters and A; the reservation for one RTT adds to
            // the task's bytes reserved (heavy detection, §4.3.1).
            self.allocated += ar;
            let t = self.classifier.entry(req.task_id);
            t.demand += req.demand;
            t.allocated += ar;
            let bytes = ar * self.rtt_ns as f64 / 8e9;
            self.classifier.reserve(req.task_id, bytes);
            SpcFeedback { ar, nr }
        }

        /// The flow ended (FIN): return its allocation and demand.
        /// A FIN after the task's end (a late or repeated one) returns its
        /// allocation but must not bring the forgotten task's counters back.
        pub fn on_flow_end(&mut self, task_id: u64, last_demand: f64, last_alloc: f64) {
            self.allocated = (self.allocated - last_alloc).max(0.0);
            if let Ok(i) = self.classifier.find(task_id) {
                let t = &mut self.classifier.tasks[i];
                t.demand = (t.demand - last_demand).max(0.0);
                t.allocated = (t.allocated - last_alloc).max(0.0);
                t.flows = t.flows.saturating_sub(1);
            }
        }

        /// The task is over: forget its counters.
        pub fn on_task_end(&mut self, task_id: u64) {
            self.classifier.forget(task_id);
        }

        /// Every flow of the task has sent its FIN: forget its counters and
        /// take back whatever allocation is still booked to it. Only a request
        /// the port answered whose feedback never reached the sender leaves
        /// one (the sender cannot return what it never heard of):
        /// without this, A would keep it for good and C − A would shrink.
        /// [`SpcSwitch::on_task_end`] keeps it instead, for a driver whose
        /// FINs may come after the task's end.
        pub fn on_task_retired(&mut self, task_id: u64) {
            if let Some(t) = self.classifier.counters(task_id) {
                self.allocated = (self.allocated - t.allocated).max(0.0);
            }
            self.classifier.forget(task_id);
        }

        /// Footnote 5, RCP-style: once per control interval, with the measured
        /// input rate (bits/s) and standing queue (bytes), move the virtual
        /// capacity towards full, queue-free utilisation. Gains as in RCP
        /// (α = 0.4, β = 0.2); bounded to [C/2, 4C].
        pub fn on_interval(&mut self, input_bps: f64, queue_bytes: f64) {
            const ALPHA: f64 = 0.4;
            const BETA: f64 = 0.2;
            let c = self.capacity;
            let d = self.rtt_ns as f64 / 1e9;
            let adj = ALPHA * (c - input_bps) - BETA * queue_bytes * 8.0 / d;
            self.virtual_capacity =
                (self.virtual_capacity * (1.0 + adj / c)).clamp(c / 2.0, 4.0 * c);
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Packet {
        task: u64,
        demand: f64,
        prev: Option<usize>,
        new_flow: bool,
    },
    FlowEnd {
        task: u64,
        prev: usize,
    },
    TaskEnd(u64),
    Retired(u64),
    Interval {
        input: f64,
        queue: f64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let rate = prop_oneof![Just(0.0), 0.0..2e9f64, Just(1e9)];
    prop_oneof![
        12 => (1..6u64, rate, prop::option::of(0..64usize), any::<bool>()).prop_map(
            |(task, demand, prev, new_flow)| Op::Packet { task, demand, prev, new_flow }
        ),
        2 => (1..6u64, 0..64usize).prop_map(|(task, prev)| Op::FlowEnd { task, prev }),
        1 => (1..6u64).prop_map(Op::TaskEnd),
        1 => (1..6u64).prop_map(Op::Retired),
        1 => (0.0..2e9f64, 0.0..2e6f64).prop_map(|(input, queue)| Op::Interval { input, queue }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_port_on_the_switch_model_decides_as_the_reference(
        ops in prop::collection::vec(op(), 1..300),
        threshold in prop_oneof![1 => Just(f64::INFINITY), 3 => 1e3..2e5f64],
    ) {
        let (c, rtt) = (1e9, 100_000u64);
        let mut old = reference::SpcSwitch::new(c, rtt, threshold);
        let mut new = SpcPort::new(c, rtt, threshold);
        // What earlier requests announced and got: later ones name one of
        // them as their previous demand and allocation (Alg. 1 line 1).
        let mut held: Vec<(f64, f64)> = Vec::new();
        for op in ops {
            match op {
                Op::Packet { task, demand, prev, new_flow } => {
                    let (prev_demand, prev_alloc) =
                        prev.and_then(|i| held.get(i).copied()).unwrap_or((0.0, 0.0));
                    let req = SpcRequest { task_id: task, demand, prev_demand, prev_alloc, new_flow };
                    let (a, b) = (old.on_packet(req), new.on_packet(req));
                    prop_assert_eq!(
                        (a.ar.to_bits(), a.nr.to_bits()),
                        (b.ar.to_bits(), b.nr.to_bits()),
                        "{:?} -> {:?} / {:?}", req, a, b
                    );
                    let _: SpcFeedback = b;
                    held.push((demand, b.ar));
                }
                Op::FlowEnd { task, prev } => {
                    let (d, a) = held.get(prev).copied().unwrap_or((0.0, 0.0));
                    old.on_flow_end(task, d, a);
                    new.on_flow_end(task, d, a);
                }
                Op::TaskEnd(t) => {
                    old.on_task_end(t);
                    new.on_task_end(t);
                }
                Op::Retired(t) => {
                    old.on_task_retired(t);
                    new.on_task_retired(t);
                }
                Op::Interval { input, queue } => {
                    old.on_interval(input, queue);
                    new.on_interval(input, queue);
                }
            }
            prop_assert_eq!(old.allocated().to_bits(), new.allocated().to_bits());
            prop_assert_eq!(old.virtual_capacity.to_bits(), new.virtual_capacity().to_bits());
            let want: Vec<_> = old
                .classifier()
                .tasks()
                .iter()
                .map(|t| (t.task_id, t.bytes_reserved.to_bits(), t.demand.to_bits(), t.flows, t.allocated.to_bits(), t.heavy))
                .collect();
            let got: Vec<_> = new
                .classifier()
                .tasks()
                .map(|t| (t.task_id, t.bytes_reserved.to_bits(), t.demand.to_bits(), t.flows, t.allocated.to_bits(), t.heavy))
                .collect();
            prop_assert_eq!(want, got);
        }
    }
}
