//! When the lab's switch may drop a finished task's SPC counters and the
//! allocation still booked to it
//! ([`SpcPort::on_task_retired`](netsched_core::baraat::SpcPort::on_task_retired)).
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
//! later task's class at NR = 0 for good (a starved task). The
//! same loss of a request that was given a rate leaves that rate in the
//! port's A; retiring the task takes it back.
//!
//! A lost FIN would leave the task open for good (its flow count never
//! reached) with the flow's demand and allocation in the port's counters:
//! the same starved next task. Baraat §4.3.3 makes its transport reliable
//! "similar to TCP" (sequence numbers, acknowledgements, timers and
//! retransmission) and says nothing else about FINs, so the FIN is one
//! more reliable message: the sender repeats it until the receiver
//! acknowledges it ([`UntilAcked`](super::until_acked::UntilAcked)). A repeat whose
//! original reached the switch (the FIN or its acknowledgement was lost
//! after it) must not return the flow's allocation twice, so each open
//! task keeps the ids of the flows whose FIN it has applied, and a retired
//! task's FINs are all repeats ([`Fin`]).

use std::collections::VecDeque;

/// Retired tasks remembered so that a repeated FIN of theirs (its
/// acknowledgement was lost) is not applied to a port that has already
/// taken the task's allocation back. A sender repeats its FIN every
/// [`REPEAT_S`](super::until_acked::REPEAT_S) until acknowledged, so a
/// task is repeated for at most a few repeat intervals after it retires;
/// thousands of tasks retire in that time only on a far larger switch.
const RETIRED_REMEMBERED: usize = 4096;

/// Per-task FINs of the tasks whose end is not settled yet.
#[derive(Clone, Debug, Default)]
pub struct TaskEnds {
    open: Vec<OpenTask>,
    /// Most recently retired last.
    retired: VecDeque<u64>,
}

#[derive(Clone, Debug)]
struct OpenTask {
    task: u64,
    /// Flows whose FIN has been applied: a repeat of one must not count
    /// (or return its allocation) twice. Per-flow, but only for the
    /// flows that have ended, and only until their task retires.
    finned: Vec<u32>,
    /// Known from the client's DONE.
    flows: Option<u32>,
}

/// What the switch does with a FIN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fin {
    /// The flow's first FIN: return its demand and allocation
    /// ([`SpcPort::on_flow_end`](netsched_core::baraat::SpcPort::on_flow_end));
    /// `retire` when it was the task's last.
    First { retire: bool },
    /// A FIN already applied, sent again because its acknowledgement was
    /// lost: acknowledge it again, apply nothing.
    Repeat,
}

impl TaskEnds {
    /// A FIN of `flow` of `task` arrived.
    pub fn on_fin(&mut self, task: u64, flow: u32) -> Fin {
        if self.retired.contains(&task) {
            return Fin::Repeat;
        }
        let i = self.open_index(task);
        if self.open[i].finned.contains(&flow) {
            return Fin::Repeat;
        }
        self.open[i].finned.push(flow);
        Fin::First {
            retire: self.settle(i),
        }
    }

    /// The client has every byte of `task`, which had `flows` flows. True
    /// when the task's counters can go now.
    pub fn on_done(&mut self, task: u64, flows: u32) -> bool {
        if self.retired.contains(&task) {
            return false;
        }
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
                    finned: Vec::new(),
                    flows: None,
                });
                self.open.len() - 1
            }
        }
    }

    fn settle(&mut self, i: usize) -> bool {
        let t = &self.open[i];
        let done = t.flows.is_some_and(|n| t.finned.len() >= n as usize);
        if done {
            let t = self.open.swap_remove(i);
            if self.retired.len() == RETIRED_REMEMBERED {
                self.retired.pop_front();
            }
            self.retired.push_back(t.task);
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baraat::until_acked::{UntilAcked, REPEAT_S};
    use netsched_core::baraat::{SpcFeedback, SpcPort, SpcRequest};

    const C: f64 = 100e6;
    const RTT_NS: u64 = 1_000_000;

    /// What a sender believes the switch holds for its flow (Alg. 1 line 1).
    #[derive(Clone, Copy, Default)]
    struct Held {
        demand: f64,
        alloc: f64,
    }

    fn request(sw: &mut SpcPort, task: u64, demand: f64, held: Held, new: bool) -> SpcFeedback {
        sw.on_packet(SpcRequest {
            task_id: task,
            demand,
            prev_demand: held.demand,
            prev_alloc: held.alloc,
            new_flow: new,
        })
    }

    /// One answered request: the sender now holds what the switch gave.
    fn answered(sw: &mut SpcPort, task: u64, demand: f64, held: &mut Held, new: bool) -> f64 {
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
        let mut sw = SpcPort::new(C, RTT_NS, f64::INFINITY);
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
        let flows_of = |sw: &SpcPort, t| sw.classifier().counters(t).map_or(0, |c| c.flows);
        assert_eq!(flows_of(&sw, 2), 4, "the retried flow is counted twice");
        // Task 1 ends: FINs return its flows' demand and allocation.
        for (flow, h) in t1.into_iter().enumerate() {
            sw.on_flow_end(1, h.demand, h.alloc);
            assert_eq!(ends.on_fin(1, flow as u32), Fin::First { retire: false });
        }
        assert!(ends.on_done(1, 3));
        sw.on_task_retired(1);
        // Task 2 is served and ends likewise.
        for h in &mut t2 {
            assert!(answered(&mut sw, 2, 800e6, h, false) > 0.0);
        }
        assert!(!ends.on_done(2, 3), "no FIN yet");
        let mut forget = Fin::Repeat;
        for (flow, h) in t2.into_iter().enumerate() {
            sw.on_flow_end(2, h.demand, h.alloc);
            forget = ends.on_fin(2, flow as u32);
        }
        // F_k still counts the phantom flow and its 800 Mbit/s demand: a
        // gate on F_k = 0 would never open.
        assert_eq!(flows_of(&sw, 2), 1);
        assert_eq!(
            forget,
            Fin::First { retire: true },
            "three FINs of three flows end task 2"
        );
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
        let mut sw = SpcPort::new(C, RTT_NS, f64::INFINITY);
        let mut ends = TaskEnds::default();
        let lost = request(&mut sw, 1, 40e6, Held::default(), true);
        assert_eq!(lost.ar, 40e6);
        let mut held = Held::default();
        answered(&mut sw, 1, 40e6, &mut held, true);
        assert_eq!(sw.allocated(), 80e6, "the lost 40 Mbit/s is still booked");
        sw.on_flow_end(1, held.demand, held.alloc);
        assert_eq!(ends.on_fin(1, 0), Fin::First { retire: false });
        assert!(ends.on_done(1, 1));
        assert!((sw.allocated() - 40e6).abs() < 1.0);
        sw.on_task_retired(1);
        assert_eq!(sw.allocated(), 0.0);
        assert!(sw.classifier().is_empty());
    }

    #[test]
    fn a_done_before_the_fins_waits_for_all_of_them() {
        let mut ends = TaskEnds::default();
        assert!(!ends.on_done(7, 2));
        assert_eq!(ends.on_fin(7, 0), Fin::First { retire: false });
        assert_eq!(ends.on_fin(8, 2), Fin::First { retire: false });
        assert_eq!(ends.on_fin(7, 0), Fin::Repeat, "the same flow's FIN again");
        assert_eq!(ends.on_fin(7, 1), Fin::First { retire: true });
        assert_eq!(ends.open(), 1, "task 8 still waits for its DONE");
        assert_eq!(ends.on_fin(7, 1), Fin::Repeat, "task 7 has retired");
        assert!(!ends.on_done(7, 2), "a retired task does not reopen");
        assert_eq!(ends.open(), 1);
    }

    /// Issue 15's lost FIN. Task 1's first flow holds the link and its FIN
    /// is lost on the way to the switch: without a repeat, task 1 never
    /// retires, its 800 Mbit/s demand stays ahead of task 2 and task 2 is
    /// told NR = 0 for good. The sender repeats the FIN until it is
    /// acknowledged; the repeat retires task 1 and task 2 gets the link.
    /// The repeat's acknowledgement is lost too, and the FIN sent once
    /// more must not return the allocation a second time (A would then
    /// hand task 2's 100 Mbit/s out again).
    #[test]
    fn a_lost_fin_is_repeated_until_acknowledged_and_applied_once() {
        let mut sw = SpcPort::new(C, RTT_NS, f64::INFINITY);
        let mut ends = TaskEnds::default();
        let mut t1 = [Held::default(); 3];
        for h in &mut t1 {
            answered(&mut sw, 1, 800e6, h, true);
        }
        assert_eq!(t1[0].alloc, C, "the first flow holds the link");
        let now = 1.0;
        let mut fins: Vec<UntilAcked> = (0..3).map(|_| UntilAcked::new(now)).collect();
        let deliver = |sw: &mut SpcPort, ends: &mut TaskEnds, flow: usize| {
            let h = t1[flow];
            match ends.on_fin(1, flow as u32) {
                Fin::First { retire } => {
                    sw.on_flow_end(1, h.demand, h.alloc);
                    if retire {
                        sw.on_task_retired(1);
                    }
                }
                Fin::Repeat => {}
            }
        };
        // Flow 0's FIN is lost; flows 1 and 2's arrive and are acknowledged.
        for (flow, fin) in fins.iter_mut().enumerate() {
            assert!(fin.due(now));
            if flow != 0 {
                deliver(&mut sw, &mut ends, flow);
                fin.on_ack();
            }
        }
        assert!(!ends.on_done(1, 3), "one FIN is missing");
        let mut t2 = Held::default();
        assert_eq!(
            answered(&mut sw, 2, 800e6, &mut t2, true),
            0.0,
            "task 1's leftover demand starves task 2"
        );
        assert!(!fins[0].due(now + REPEAT_S / 2.0));
        // The repeat gets through and retires task 1.
        assert!(fins[0].due(now + REPEAT_S));
        deliver(&mut sw, &mut ends, 0);
        assert_eq!(ends.open(), 0);
        assert!(sw.classifier().counters(1).is_none());
        assert_eq!(answered(&mut sw, 2, 800e6, &mut t2, false), C);
        // Its acknowledgement is lost: the FIN goes once more, and is
        // acknowledged but not applied.
        assert!(fins[0].due(now + 2.0 * REPEAT_S));
        deliver(&mut sw, &mut ends, 0);
        fins[0].on_ack();
        assert_eq!(sw.allocated(), C, "task 2's allocation still booked");
        assert!(fins.iter_mut().all(|f| !f.due(now + 1.0)));
    }
}
