//! Baraat's decentralised mechanisms as sans-IO state machines: task-id
//! counters (§4.1), the FIFO-LM classifier with on-the-fly heavy-task
//! detection (§3.3, §4.3.1), the SPC switch feedback of Algorithm 1 (§4.3.2)
//! and the sender demand rule of Algorithm 2 (§4.3.3).
//!
//! None of them owns a clock, socket or thread: a driver hands them a packet
//! header's fields (or an interval tick) and gets back a rate or a decision.
//! The flow-level simulator uses [`TaskIdCounter`] and [`FifoLm`] directly and
//! computes the fluid fixed point that [`SpcSwitch`] + [`SpcSender`] converge
//! to (the priority water-fill of `engine/allocation.rs`,
//! `Engine::fill_group`); the packet-level Fig. 7 driver (`udp.rs`) runs the
//! same structs per packet.
//! Rates are bits per second (f64); the paper's header encodes them as
//! bytes/µs in one byte, which is a wire concern, not the algorithm's.

/// §4.1: a monotonically increasing counter per entry point. With `n`
/// counters, counter `i` starts at `i + 1` and steps by `n`, so ids from
/// different load balancers interleave and never collide.
#[derive(Clone, Debug)]
pub struct TaskIdCounter {
    next: u64,
    step: u64,
}

impl TaskIdCounter {
    /// Counter `index` (0-based) of `count` counters in the system.
    pub fn new(index: u64, count: u64) -> Self {
        let count = count.max(1);
        TaskIdCounter {
            next: index % count + 1,
            step: count,
        }
    }

    /// The id of the task arriving now through this entry point.
    pub fn next_id(&mut self) -> u64 {
        let id = self.next;
        self.next += self.step;
        id
    }
}

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

/// What a data packet's SPC header carries for one switch (§4.4 "Header"):
/// the flow's task id, its demand for the next RTT, and what this switch
/// gave it in the previous RTT (so the switch can return it, Alg. 1 line 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpcRequest {
    pub task_id: u64,
    /// Demand for the coming RTT (bits/s).
    pub demand: f64,
    /// Demand the flow announced last time (0 for a new flow).
    pub prev_demand: f64,
    /// Allocation (AR) this switch gave last time (0 for a new flow).
    pub prev_alloc: f64,
    /// True on the flow's first packet.
    pub new_flow: bool,
}

/// Alg. 1's output for one switch: actual rate and nominal rate (bits/s).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpcFeedback {
    pub ar: f64,
    pub nr: f64,
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
    /// one (the sender cannot return what it never heard of; issue 15):
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
        self.virtual_capacity = (self.virtual_capacity * (1.0 + adj / c)).clamp(c / 2.0, 4.0 * c);
    }
}

/// Alg. 2: the sender's demand for the next RTT.
#[derive(Clone, Debug)]
pub struct SpcSender {
    pub nic_bps: f64,
    pub rtt_ns: u64,
    /// δ: a little above the nominal bottleneck share, so the sender notices
    /// when the bottleneck frees up (§4.3.3).
    pub delta_bps: f64,
    demand: f64,
    setup: bool,
    rate: f64,
}

impl SpcSender {
    pub fn new(nic_bps: f64, rtt_ns: u64, delta_bps: f64) -> Self {
        SpcSender {
            nic_bps,
            rtt_ns: rtt_ns.max(1),
            delta_bps,
            demand: 0.0,
            setup: false,
            rate: 0.0,
        }
    }

    /// Line 2-5: the demand to put in the next packet header, given the
    /// bytes still to send and the smallest NR of the previous RTT.
    pub fn next_demand(&mut self, data_in_buffer: u64, min_nr: Option<f64>) -> f64 {
        let mut d = self
            .nic_bps
            .min(data_in_buffer as f64 * 8e9 / self.rtt_ns as f64);
        if self.setup {
            if let Some(nr) = min_nr {
                if nr < self.demand {
                    d = d.min(nr + self.delta_bps);
                }
            }
        }
        self.setup = true;
        self.demand = d;
        d
    }

    /// The feedback vector came back: send at the smallest AR (§4.3.3).
    pub fn on_feedback(&mut self, fb: &[SpcFeedback]) -> f64 {
        self.rate = fb.iter().map(|f| f.ar).fold(self.nic_bps, f64::min);
        self.rate
    }

    pub fn demand(&self) -> f64 {
        self.demand
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_interleave() {
        let mut a = TaskIdCounter::new(0, 2);
        let mut b = TaskIdCounter::new(1, 2);
        assert_eq!(
            (a.next_id(), b.next_id(), a.next_id(), b.next_id()),
            (1, 2, 3, 4)
        );
        let mut one = TaskIdCounter::new(0, 1);
        assert_eq!((one.next_id(), one.next_id()), (1, 2));
    }

    #[test]
    fn fifo_lm_merges_heavy_with_next() {
        let mut c = FifoLm::new(100.0);
        for id in [3, 1, 2, 4] {
            c.add_flow(id);
        }
        let leaders: Vec<u64> = c.classes().map(|x| x.2).collect();
        assert_eq!(leaders, vec![1, 2, 3, 4]);
        assert!(!c.reserve(1, 100.0));
        assert!(c.reserve(1, 1.0));
        assert_eq!(c.leader(2), Some(1));
        assert_eq!(c.leader(3), Some(3));
        c.reserve(2, 500.0);
        assert_eq!(c.leader(3), Some(1));
        assert_eq!(c.leader(4), Some(4));
        c.forget(1);
        assert_eq!(c.leader(3), Some(2));
        assert_eq!(
            c.next_crossing_ns(|id| if id == 3 { 8e9 } else { 0.0 }),
            Some(100.0)
        );
    }

    /// `forget` reports whether another task's class changed, which is when
    /// the flow simulator must recompute the port.
    #[test]
    fn forget_reports_class_changes() {
        let mut c = FifoLm::new(100.0);
        for id in 1..=6 {
            c.add_flow(id);
        }
        // A light task leading its own class: the next one led its own.
        assert!(!c.forget(1));
        assert_eq!(c.leader(2), Some(2));
        c.reserve(2, 200.0);
        assert_eq!(c.leader(3), Some(2));
        // 3 was light but in heavy 2's class: 4 now joins that class.
        assert!(c.forget(3));
        assert_eq!(c.leader(4), Some(2));
        // 2 was heavy and led {2, 4}: 4 leads its own class now.
        assert!(c.forget(2));
        assert_eq!(c.leader(4), Some(4));
        // The last task, and a task not at the port: nothing follows.
        assert!(!c.forget(6));
        assert!(!c.forget(42));
        // A heavy task inside a heavy task's class: the next one stays.
        c.reserve(4, 200.0);
        c.reserve(5, 200.0);
        c.add_flow(7);
        assert_eq!(c.leader(7), Some(4));
        assert!(!c.forget(5));
        assert_eq!(c.leader(7), Some(4));
    }

    /// Alg. 1 gives the top class everything it demands and the next class
    /// what is left (strict priority); within a class, an equal split.
    #[test]
    fn a_fin_after_the_task_ended_does_not_recreate_its_counters() {
        let mut sw = SpcSwitch::new(100e6, 1_000_000, 1e12);
        let fb = sw.on_packet(SpcRequest {
            task_id: 7,
            demand: 10e6,
            prev_demand: 0.0,
            prev_alloc: 0.0,
            new_flow: true,
        });
        sw.on_task_end(7);
        assert!(sw.classifier().tasks().is_empty());
        sw.on_flow_end(7, 10e6, fb.ar);
        assert!(
            sw.classifier().tasks().is_empty(),
            "{:?}",
            sw.classifier().tasks()
        );
        assert_eq!(sw.allocated(), 0.0);
    }

    #[test]
    fn alg1_priority_and_split() {
        let c = 1e9;
        let mut sw = SpcSwitch::new(c, 100_000, f64::INFINITY);
        let req = |task_id, demand| SpcRequest {
            task_id,
            demand,
            prev_demand: 0.0,
            prev_alloc: 0.0,
            new_flow: true,
        };
        let a = sw.on_packet(req(1, 0.3e9));
        assert_eq!(
            a,
            SpcFeedback {
                ar: 0.3e9,
                nr: 0.3e9
            }
        );
        // Task 2 asks for the full NIC rate: only 0.7 left after task 1.
        let b = sw.on_packet(req(2, 1e9));
        assert!((b.nr - 0.7e9).abs() < 1.0 && (b.ar - 0.7e9).abs() < 1.0);
        // Two flows of task 1 both at full demand: split.
        let mut sw = SpcSwitch::new(c, 100_000, f64::INFINITY);
        let x = sw.on_packet(req(1, 1e9));
        let y = sw.on_packet(req(1, 1e9));
        assert_eq!(x.nr, 1e9); // alone at first
        assert_eq!(y.nr, 0.5e9);
        assert_eq!(y.ar, 0.0); // x holds the link until it comes back
        let x2 = sw.on_packet(SpcRequest {
            task_id: 1,
            demand: 1e9,
            prev_demand: 1e9,
            prev_alloc: x.ar,
            new_flow: false,
        });
        assert_eq!(x2.ar, 0.5e9);
    }

    #[test]
    fn alg2_lowers_demand_to_bottleneck() {
        let mut s = SpcSender::new(1e9, 100_000, 1e6);
        // 1 MB to send: 1 MB per 100 µs is more than the NIC.
        assert_eq!(s.next_demand(1_000_000, None), 1e9);
        assert_eq!(
            s.on_feedback(&[SpcFeedback {
                ar: 0.2e9,
                nr: 0.25e9
            }]),
            0.2e9
        );
        assert_eq!(s.next_demand(1_000_000, Some(0.25e9)), 0.25e9 + 1e6);
        // The bottleneck freed up: NR above the demand lets it grow back.
        assert_eq!(s.next_demand(1_000_000, Some(1e9)), 1e9);
        // Little data left: demand = data / RTT.
        assert_eq!(s.next_demand(1_000, Some(1e9)), 1_000.0 * 8e9 / 100_000.0);
    }
}

/// Alg. 1 and Alg. 2 driven together, one packet per flow per RTT, converge
/// to the allocation the flow simulator computes directly
/// (`engine/allocation.rs`): the work-conservation case of tests/examples.rs.
#[cfg(test)]
mod convergence {
    use super::*;

    #[test]
    fn spc_rtt_loop_reaches_work_conserving_allocation() {
        let (c, rtt, delta) = (1e9, 100_000u64, 1e6);
        // Switch ports: 0 = h0 uplink, 1 = h1 uplink, 2 = ToR uplink.
        let mut sw: Vec<SpcSwitch> = (0..3)
            .map(|_| SpcSwitch::new(c, rtt, f64::INFINITY))
            .collect();
        // (task id, path): a and b (task 1) cross the ToR uplink; c (task 2)
        // shares h0's uplink with a.
        let flows: [(u64, &[usize]); 3] = [(1, &[0, 2]), (1, &[1, 2]), (2, &[0])];
        let mut senders: Vec<SpcSender> = (0..3).map(|_| SpcSender::new(c, rtt, delta)).collect();
        let mut prev_demand = [0.0f64; 3];
        let mut prev_alloc = [[0.0f64; 3]; 3];
        let mut min_nr: [Option<f64>; 3] = [None; 3];
        let mut rates = [0.0; 3];
        for round in 0..200 {
            for (i, (task, path)) in flows.iter().enumerate() {
                let d = senders[i].next_demand(u64::MAX / 16, min_nr[i]);
                let mut fb = Vec::new();
                for &s in path.iter() {
                    let f = sw[s].on_packet(SpcRequest {
                        task_id: *task,
                        demand: d,
                        prev_demand: prev_demand[i],
                        prev_alloc: prev_alloc[i][s],
                        new_flow: round == 0,
                    });
                    prev_alloc[i][s] = f.ar;
                    fb.push(f);
                }
                prev_demand[i] = d;
                min_nr[i] = fb.iter().map(|f| f.nr).reduce(f64::min);
                rates[i] = senders[i].on_feedback(&fb);
            }
        }
        let want = [0.5e9, 0.5e9, 0.5e9];
        for i in 0..3 {
            assert!(
                (rates[i] - want[i]).abs() <= 2.0 * delta,
                "flow {i}: {rates:?}"
            );
        }
        // h0's uplink is not left idle.
        assert!(rates[0] + rates[2] >= c - 2.0 * delta, "{rates:?}");
    }
}
