//! When the lab's switch may drop a finished task's SPC counters and the
//! allocation still booked to it
//! ([`SpcSwitch::on_task_retired`](crate::spc::SpcSwitch::on_task_retired)).
//!
//! The client's DONE says the task's bytes are in, but its servers' FINs
//! (which return the flows' last demand and allocation) may still be on
//! the way, so the counters go once every flow's FIN is in. Every FIN is
//! counted here, per task, against the number of flows the DONE names —
//! not read off the task's flow counter F_k. That counter is only as exact
//! as the requests' new-flow flags: a flow's first request that the switch
//! counted but whose packet was lost after it (most likely the client's
//! socket overflowing on a loaded machine) is unanswered, so the sender marks its
//! retry new again and F_k counts the flow twice. Waiting for F_k to reach
//! zero then waits for a FIN that never comes, and the task's leftover
//! demand (the lost request's, counted at a higher priority) keeps every
//! later task's class at NR = 0 for good (issue 15's starved task). The
//! same loss of a request that was given a rate leaves that rate in the
//! port's A; retiring the task takes it back.

/// Per-task FIN counts of the tasks whose end is not settled yet.
#[derive(Clone, Debug, Default)]
pub struct TaskEnds {
    open: Vec<OpenTask>,
}

#[derive(Clone, Copy, Debug)]
struct OpenTask {
    task: u64,
    fins: u32,
    /// Known from the client's DONE.
    flows: Option<u32>,
}

impl TaskEnds {
    /// A FIN of `task` arrived. True when the task's counters can go now.
    pub fn on_fin(&mut self, task: u64) -> bool {
        let i = self.open_index(task);
        self.open[i].fins += 1;
        self.settle(i)
    }

    /// The client has every byte of `task`, which had `flows` flows. True
    /// when the task's counters can go now.
    pub fn on_done(&mut self, task: u64, flows: u32) -> bool {
        let i = self.open_index(task);
        self.open[i].flows = Some(flows);
        self.settle(i)
    }

    /// Tasks with a DONE or a FIN whose end is not settled yet.
    pub fn open(&self) -> usize {
        self.open.len()
    }

    fn open_index(&mut self, task: u64) -> usize {
        match self.open.iter().position(|t| t.task == task) {
            Some(i) => i,
            None => {
                self.open.push(OpenTask {
                    task,
                    fins: 0,
                    flows: None,
                });
                self.open.len() - 1
            }
        }
    }

    fn settle(&mut self, i: usize) -> bool {
        let t = self.open[i];
        let done = t.flows.is_some_and(|n| t.fins >= n);
        if done {
            self.open.swap_remove(i);
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spc::{SpcFeedback, SpcRequest, SpcSwitch};

    const C: f64 = 100e6;
    const RTT_NS: u64 = 1_000_000;

    /// What a sender believes the switch holds for its flow (Alg. 1 line 1).
    #[derive(Clone, Copy, Default)]
    struct Held {
        demand: f64,
        alloc: f64,
    }

    fn request(sw: &mut SpcSwitch, task: u64, demand: f64, held: Held, new: bool) -> SpcFeedback {
        sw.on_packet(SpcRequest {
            task_id: task,
            demand,
            prev_demand: held.demand,
            prev_alloc: held.alloc,
            new_flow: new,
        })
    }

    /// One answered request: the sender now holds what the switch gave.
    fn answered(sw: &mut SpcSwitch, task: u64, demand: f64, held: &mut Held, new: bool) -> f64 {
        let fb = request(sw, task, demand, *held, new);
        *held = Held {
            demand,
            alloc: fb.ar,
        };
        fb.ar
    }

    /// Issue 15's starved task, deterministically: task 2's first flow
    /// makes its first request while task 1 holds the link; the switch
    /// counts it (F_NEW) and answers AR = 0, and the packet is lost after
    /// the switch. The sender hears nothing, so after its timeout it asks
    /// again as a new flow, naming nothing held. Task 2 then runs and ends
    /// (three FINs and a DONE), and task 3 must get a rate.
    #[test]
    fn a_lost_first_request_after_the_switch_does_not_starve_the_next_task() {
        let mut sw = SpcSwitch::new(C, RTT_NS, f64::INFINITY);
        let mut ends = TaskEnds::default();
        let mut t1 = [Held::default(); 3];
        for h in &mut t1 {
            answered(&mut sw, 1, 800e6, h, true);
        }
        // Counted, answered, lost on its way to the client.
        let lost = request(&mut sw, 2, 800e6, Held::default(), true);
        assert_eq!(lost.ar, 0.0, "task 1 holds the link");
        let mut t2 = [Held::default(); 3];
        for h in &mut t2 {
            answered(&mut sw, 2, 800e6, h, true);
        }
        let flows_of = |sw: &SpcSwitch, t| sw.classifier().counters(t).map_or(0, |c| c.flows);
        assert_eq!(flows_of(&sw, 2), 4, "the retried flow is counted twice");
        // Task 1 ends: FINs return its flows' demand and allocation.
        for h in t1 {
            sw.on_flow_end(1, h.demand, h.alloc);
            assert!(!ends.on_fin(1));
        }
        assert!(ends.on_done(1, 3));
        sw.on_task_retired(1);
        // Task 2 is served and ends likewise.
        for h in &mut t2 {
            assert!(answered(&mut sw, 2, 800e6, h, false) > 0.0);
        }
        assert!(!ends.on_done(2, 3), "no FIN yet");
        let mut forget = false;
        for h in t2 {
            sw.on_flow_end(2, h.demand, h.alloc);
            forget = ends.on_fin(2);
        }
        // F_k still counts the phantom flow and its 800 Mbit/s demand: a
        // gate on F_k = 0 would never open.
        assert_eq!(flows_of(&sw, 2), 1);
        assert!(forget, "three FINs of three flows end task 2");
        sw.on_task_retired(2);
        assert_eq!(ends.open(), 0);
        let mut t3 = Held::default();
        let ar = answered(&mut sw, 3, 800e6, &mut t3, true);
        assert!(ar > 0.0, "task 3 starved: AR {ar}");
    }

    /// The same loss when the lost request was given a rate: the port's
    /// A keeps it (the sender's retry names nothing held) until the task
    /// is retired.
    #[test]
    fn a_lost_allocation_is_taken_back_when_the_task_retires() {
        let mut sw = SpcSwitch::new(C, RTT_NS, f64::INFINITY);
        let mut ends = TaskEnds::default();
        let lost = request(&mut sw, 1, 40e6, Held::default(), true);
        assert_eq!(lost.ar, 40e6);
        let mut held = Held::default();
        answered(&mut sw, 1, 40e6, &mut held, true);
        assert_eq!(sw.allocated(), 80e6, "the lost 40 Mbit/s is still booked");
        sw.on_flow_end(1, held.demand, held.alloc);
        assert!(!ends.on_fin(1));
        assert!(ends.on_done(1, 1));
        assert!((sw.allocated() - 40e6).abs() < 1.0);
        sw.on_task_retired(1);
        assert_eq!(sw.allocated(), 0.0);
        assert!(sw.classifier().tasks().is_empty());
    }

    #[test]
    fn a_done_before_the_fins_waits_for_all_of_them() {
        let mut ends = TaskEnds::default();
        assert!(!ends.on_done(7, 2));
        assert!(!ends.on_fin(7));
        assert!(!ends.on_fin(8), "another task's FIN");
        assert!(ends.on_fin(7));
        assert_eq!(ends.open(), 1, "task 8 still waits for its DONE");
    }
}
