//! Smart Priority Class at one switch output port (Baraat §4.3.2, Alg. 1),
//! on the switch model.
//!
//! One request (the SPC header of a data packet) is one pass:
//!
//! | stage | array | access |
//! |---|---|---|
//! | 0 | `spc.vcap` | read the virtual capacity C (footnote 5) |
//! | 1 | `spc.class` | line 1 (return the flow's previous demand), line 2 (classify), lines 3-9 (NR from the classes ahead), line 12 (add the new demand): one scan of the port's task rows |
//! | 2 | `spc.allocated` | line 1 (return the previous AR), line 10 (AR = min(NR, C − A)), line 12 (A += AR) |
//! | 3 | `spc.booked` | line 1 and 12 for the task's booked AR, and the bytes reserved (§4.3.1) |
//!
//! The task row is needed on both sides of `A` (NR before it, AR after it),
//! so the row is split in two arrays. The heavy flag is read by the scan of
//! stage 1 and set where the reservation crosses the threshold, in stage 3:
//! the pass that makes a task heavy is resubmitted once to set it in
//! `spc.class` (once per task and port). Results are those of Alg. 1 run
//! in this order on one packet at a time, bit for bit.
//!
//! What an RMT pipeline could not do here, declared in the layout: the
//! scan of stage 1 (Baraat's switch is a software switch, §4.4) and rates
//! as f64 pairs (its switch uses integer arithmetic). Task rows are
//! installed and removed by the control plane ([`FifoLm`]); returning a
//! retired task's booking ([`SpcPort::on_task_retired`]) is a control-plane
//! operation too.

use super::classifier::{class_bounds, FifoLm};
use super::{SpcFeedback, SpcRequest};
use crate::switch::{Layout, Pipeline, RegisterArray};

/// The SPC logic of one switch output port (Alg. 1), with per-task counters
/// only. Capacity is a *virtual* capacity (footnote 5) that an RCP-style
/// control loop raises when the link is under-used and lowers under queuing,
/// which is how Alg. 1's equal split `ClassAvlBW / F_k` reaches a max-min
/// allocation when some flows of the class demand less.
#[derive(Clone, Debug)]
pub struct SpcPort {
    /// Physical capacity (bits/s).
    pub capacity: f64,
    /// Virtual capacity used by Alg. 1 (bits/s), one cell.
    vcap: RegisterArray<f64>,
    /// Sum of current allocations A (bits/s), one cell.
    allocated: RegisterArray<f64>,
    /// RTT, used to turn a rate into bytes reserved for one interval.
    rtt_ns: u64,
    classifier: FifoLm,
    pipe: Pipeline,
}

impl SpcPort {
    pub fn new(capacity_bps: f64, rtt_ns: u64, heavy_threshold_bytes: f64) -> Self {
        let mut layout = Layout::new();
        let stages = [
            layout.stage(),
            layout.stage(),
            layout.stage(),
            layout.stage(),
        ];
        let vcap = layout.array(stages[0], "spc.vcap", 1, capacity_bps);
        let allocated = layout.array(stages[2], "spc.allocated", 1, 0.0);
        let classifier = FifoLm::placed(&mut layout, stages[1], stages[3], heavy_threshold_bytes);
        SpcPort {
            capacity: capacity_bps,
            vcap,
            allocated,
            rtt_ns: rtt_ns.max(1),
            classifier,
            pipe: Pipeline::with_layout(layout),
        }
    }

    pub fn classifier(&self) -> &FifoLm {
        &self.classifier
    }

    /// Sum of current allocations A (a control-plane read).
    pub fn allocated(&self) -> f64 {
        self.allocated.peek(0)
    }

    /// Virtual capacity (a control-plane read).
    pub fn virtual_capacity(&self) -> f64 {
        self.vcap.peek(0)
    }

    /// The port's pipeline: its layout and pass counts.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipe
    }

    /// Alg. 1 for one packet of a flow.
    pub fn on_packet(&mut self, req: SpcRequest) -> SpcFeedback {
        let i = self.classifier.install(req.task_id);
        let pass = self.pipe.begin();
        let cap = self.vcap.read(&pass, 0);
        let nr = self.classifier.class.scan_update(&pass, |rows| {
            // Line 1: return the previous demand; a new flow is counted.
            let r = &mut rows[i];
            if req.new_flow {
                r.flows += 1;
            }
            r.demand = (r.demand - req.prev_demand).max(0.0);
            // Line 2: k = Classifier(TaskID). Demands of higher classes
            // (D_i, i < k) and of the flow's own class without the flow
            // (D_k), and the flows of the class including this one (F_k).
            let (start, end) = class_bounds(rows, i);
            let higher: f64 = rows[..start].iter().fold(0.0, |s, r| s + r.demand);
            let (own, flows_k) = rows[start..end]
                .iter()
                .fold((0.0, 0u32), |(d, f), r| (d + r.demand, f + r.flows));
            // Lines 3-9.
            let class_avl = (cap - higher).max(0.0);
            let avail_share = (class_avl - own).max(0.0);
            let nr = if avail_share >= req.demand {
                req.demand
            } else {
                class_avl / flows_k.max(1) as f64
            };
            // Line 12, the demand half.
            rows[i].demand += req.demand;
            nr
        });
        // Lines 1, 10 and 12 on A: bandwidth promised to others (e.g. a
        // lower-priority flow not yet preempted) is not handed out twice.
        let ar = self.allocated.update(&pass, 0, |a| {
            *a = (*a - req.prev_alloc).max(0.0);
            let ar = nr.min((cap - *a).max(0.0));
            *a += ar;
            ar
        });
        // Line 12, the task's booking: the reservation for one RTT adds to
        // the task's bytes reserved (heavy detection, §4.3.1).
        let bytes = ar * self.rtt_ns as f64 / 8e9;
        let threshold = self.classifier.threshold();
        let heavy = self.classifier.booked.update(&pass, i, |b| {
            b.allocated = (b.allocated - req.prev_alloc).max(0.0);
            b.allocated += ar;
            b.bytes_reserved += bytes;
            let crossed = !b.heavy && b.bytes_reserved > threshold;
            b.heavy |= crossed;
            crossed
        });
        if heavy {
            let again = self.pipe.resubmit();
            self.classifier.class.update(&again, i, |r| r.heavy = true);
        }
        SpcFeedback { ar, nr }
    }

    /// The flow ended (FIN): return its allocation and demand.
    /// A FIN after the task's end (a late or repeated one) returns its
    /// allocation but must not bring the forgotten task's counters back.
    pub fn on_flow_end(&mut self, task_id: u64, last_demand: f64, last_alloc: f64) {
        let row = self.classifier.find(task_id).ok();
        let pass = self.pipe.begin();
        if let Some(i) = row {
            self.classifier.class.update(&pass, i, |r| {
                r.demand = (r.demand - last_demand).max(0.0);
                r.flows = r.flows.saturating_sub(1);
            });
        }
        self.allocated
            .update(&pass, 0, |a| *a = (*a - last_alloc).max(0.0));
        if let Some(i) = row {
            self.classifier.booked.update(&pass, i, |b| {
                b.allocated = (b.allocated - last_alloc).max(0.0)
            });
        }
    }

    /// The task is over: forget its counters.
    pub fn on_task_end(&mut self, task_id: u64) {
        self.classifier.forget(task_id);
    }

    /// Every flow of the task has sent its FIN: forget its counters and
    /// take back whatever allocation is still booked to it. Only a request
    /// the port answered whose feedback never reached the sender leaves
    /// one (the sender cannot return what it never heard of): without this,
    /// A would keep it for good and C − A would shrink.
    /// [`SpcPort::on_task_end`] keeps it instead, for a driver whose FINs
    /// may come after the task's end. The switch CPU does this (it removes
    /// the task's rows), so it is not a pass.
    pub fn on_task_retired(&mut self, task_id: u64) {
        if let Some(t) = self.classifier.counters(task_id) {
            let a = (self.allocated.peek(0) - t.allocated).max(0.0);
            self.allocated.control_write(0, a);
        }
        self.classifier.forget(task_id);
    }

    /// Footnote 5, RCP-style: once per control interval, with the measured
    /// input rate (bits/s) and standing queue (bytes), move the virtual
    /// capacity towards full, queue-free utilisation. Gains as in RCP
    /// (α = 0.4, β = 0.2); bounded to [C/2, 4C]. One pass (a timer packet).
    pub fn on_interval(&mut self, input_bps: f64, queue_bytes: f64) {
        const ALPHA: f64 = 0.4;
        const BETA: f64 = 0.2;
        let c = self.capacity;
        let d = self.rtt_ns as f64 / 1e9;
        let adj = ALPHA * (c - input_bps) - BETA * queue_bytes * 8.0 / d;
        let pass = self.pipe.begin();
        self.vcap.update(&pass, 0, |v| {
            *v = (*v * (1.0 + adj / c)).clamp(c / 2.0, 4.0 * c);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(task_id: u64, demand: f64) -> SpcRequest {
        SpcRequest::first(task_id, demand)
    }

    #[test]
    fn a_fin_after_the_task_ended_does_not_recreate_its_counters() {
        let mut sw = SpcPort::new(100e6, 1_000_000, 1e12);
        let fb = sw.on_packet(SpcRequest {
            task_id: 7,
            demand: 10e6,
            prev_demand: 0.0,
            prev_alloc: 0.0,
            new_flow: true,
        });
        sw.on_task_end(7);
        assert!(sw.classifier().is_empty());
        sw.on_flow_end(7, 10e6, fb.ar);
        assert!(sw.classifier().is_empty(), "{:?}", sw.classifier().tasks());
        assert_eq!(sw.allocated(), 0.0);
    }

    /// Alg. 1 gives the top class everything it demands and the next class
    /// what is left (strict priority); within a class, an equal split.
    #[test]
    fn alg1_priority_and_split() {
        let c = 1e9;
        let mut sw = SpcPort::new(c, 100_000, f64::INFINITY);
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
        let mut sw = SpcPort::new(c, 100_000, f64::INFINITY);
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
        // Every request was one pass in stage order (checked builds).
        assert_eq!(sw.pipeline().first_passes, 3);
        assert_eq!(sw.pipeline().resubmissions, 0);
    }

    /// A heavy task shares its class with the next one (§3.3): once task 1
    /// has reserved more than the threshold, task 2's flow splits task 1's
    /// class instead of waiting behind it. Turning heavy costs the port one
    /// resubmission, once.
    #[test]
    fn a_task_turning_heavy_takes_the_next_task_into_its_class() {
        let (c, rtt) = (1e9, 1_000_000u64);
        // One RTT at 1 Gbit/s reserves 125 KB.
        let mut sw = SpcPort::new(c, rtt, 100_000.0);
        let a = sw.on_packet(req(1, 1e9));
        assert_eq!(a.ar, 1e9);
        assert_eq!(sw.pipeline().resubmissions, 1, "task 1 turned heavy");
        assert!(sw.classifier().counters(1).is_some_and(|t| t.heavy));
        let b = sw.on_packet(req(2, 1e9));
        assert_eq!(b.nr, 0.5e9, "task 2 shares task 1's class");
        assert_eq!(sw.classifier().leader(2), Some(1));
        let again = sw.on_packet(SpcRequest {
            prev_demand: 1e9,
            prev_alloc: a.ar,
            new_flow: false,
            ..req(1, 1e9)
        });
        assert_eq!(again.nr, 0.5e9);
        assert_eq!(sw.pipeline().resubmissions, 1, "heavy only once");
    }

    #[test]
    fn the_layout_has_four_stages_and_declares_its_exceptions() {
        let sw = SpcPort::new(1e9, 1, 1.0);
        let layout = sw.pipeline().layout();
        assert_eq!(layout.stage_count(), 4, "the task tables start empty");
        let names: Vec<&str> = layout.arrays().iter().map(|a| a.name).collect();
        assert_eq!(
            names,
            ["spc.vcap", "spc.allocated", "spc.class", "spc.booked"]
        );
        let class = &layout.arrays()[2];
        assert!(class.scanned_because.is_some() && class.wide_because.is_none());
        assert!(layout.arrays()[3].wide_because.is_some());
    }

    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "scanned but not declared")]
    fn only_a_declared_array_may_be_scanned() {
        let mut sw = SpcPort::new(1e9, 1, 1.0);
        let p = sw.pipe.begin();
        sw.vcap.scan_update(&p, |_| ());
    }
}
