//! R2P2's JBSQ(k) in-switch scheduler (Kogias et al., ATC'19), as the
//! authors built it and as Draconis evaluates it (§2.2, §8.3).
//!
//! What the switch keeps and when it changes (docs/draconis.md "R2P2 as its
//! authors built it" maps each rule to epfl-dcsl/r2p2):
//! * One outstanding-request counter per executor. It rises when the switch
//!   dispatches a request to that executor and falls when the executor's
//!   feedback packet (R2P2's FEEDBACK message, sent after the reply) comes
//!   back through the switch, so it lags the executor by the feedback's
//!   one-way latency: the driver delivers [`PullInput::Completion`] a link
//!   after the task ends.
//! * The choice, [`JbsqSearch`]. `shortest-first` is the design as R2P2's
//!   paper and Draconis §2.2 describe it and as the authors' software router
//!   does it: the emptiest executors first. A request looks for an executor
//!   with fewer than `bound` outstanding requests, starting with `bound = 1`
//!   (an idle executor) and raising the bound by one after a full sweep at
//!   each bound, up to `k`, each sweep from a rotating cursor (one
//!   read-and-increment of a one-cell array on the first pass) so that
//!   simultaneous arrivals do not all probe executor 0 first. `first-fit`
//!   is what Draconis measured of R2P2's P4 program (R2P2-3 recirculates
//!   almost never, and blocks behind running tasks from 20-40 % load, §8.1,
//!   §8.3): the request takes the first executor under `k`, probing from one
//!   its hash picks. A register array allows one access per pass, so either
//!   way each pass probes one executor with a conditional increment
//!   (`if c < bound { c += 1 }`) and recirculates to probe the next: O(n)
//!   passes per bound, O(n·k) worst case (Draconis §2.2).
//! * When every executor holds `k`, the request keeps recirculating at bound
//!   `k` until a slot frees: the switch is R2P2's router queue. Nothing in
//!   the switch drops it; a recirculation the switch has no capacity for is
//!   lost (Draconis §2.2, §8.3), which the simulator models as a shared
//!   recirculation port of limited bandwidth and buffer (`network.recirc_gbps`,
//!   `network.recirc_buffer`). An optional per-request budget
//!   (`recirc_budget`, off by default) exists for runtimes without such a
//!   port; the authors' code has none.

use super::{PullAction, PullDataPlane, PullInput, PullOutbox};
use crate::dataplane::DropReason;
use crate::rng::Rng;
use crate::switch::{Layout, Pass, Pipeline, RegisterArray};
use crate::Nanos;

/// R2P2 configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct R2p2Config {
    /// JBSQ bound: at most this many tasks at an executor, one running
    /// (§8: 3).
    pub jbsq_bound: u32,
    /// Recirculations a request may use before it is dropped. `None` (the
    /// default, as in the authors' router): it recirculates until a slot
    /// frees, and only the recirculation port's capacity can lose it.
    pub recirc_budget: Option<u32>,
    /// Which executor a request probes first, and at which bound.
    pub search: JbsqSearch,
}

impl Default for R2p2Config {
    fn default() -> Self {
        R2p2Config {
            jbsq_bound: 3,
            recirc_budget: None,
            search: JbsqSearch::default(),
        }
    }
}

/// How a request looks for an executor under the JBSQ bound (module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum JbsqSearch {
    /// Idle executors first, then bound 2, ..., k, a full sweep per bound,
    /// from a rotating cursor (R2P2 §3.2, Draconis §2.2).
    ShortestFirst,
    /// The first executor under k, from one the request's hash picks: the
    /// behaviour Draconis measured (§8.1, §8.3), so the default.
    #[default]
    FirstFit,
}

pub use super::contract::JbsqProbe;

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct R2p2Stats {
    pub dispatched: u64,
    pub recirculations: u64,
    pub dropped: u64,
}

/// The JBSQ(k) switch.
#[derive(Clone, Debug)]
pub struct R2p2Jbsq {
    pipeline: Pipeline,
    config: R2p2Config,
    executors: u32,
    cursor: RegisterArray<u32>,
    outstanding: RegisterArray<u32>,
    pub stats: R2p2Stats,
}

impl R2p2Jbsq {
    pub fn new(executors: u32, config: R2p2Config) -> Self {
        assert!(executors > 0, "R2P2 needs at least one executor");
        if let Err(e) = crate::limits::jbsq_bound(config.jbsq_bound) {
            panic!("JBSQ bound: {e}");
        }
        // Stages: the probe cursor, then the counter of the executor it names.
        let mut layout = Layout::new();
        let (cursor, counters) = (layout.stage(), layout.stage());
        let cursor = layout.array(cursor, "r2p2.cursor", 1, 0);
        let outstanding = layout.array(counters, "r2p2.outstanding", executors as usize, 0);
        R2p2Jbsq {
            pipeline: Pipeline::with_layout(layout),
            config,
            executors,
            cursor,
            outstanding,
            stats: R2p2Stats::default(),
        }
    }

    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// Outstanding tasks per executor (control-plane read).
    pub fn outstanding(&self) -> &[u32] {
        self.outstanding.as_slice()
    }

    // Called from `PullDataPlane::handle` only: inlined there, so the
    // packet is not copied again on the way in.
    #[inline(always)]
    fn pass(&mut self, input: PullInput, out: &mut PullOutbox) {
        match input {
            PullInput::Request { client, task } => {
                let pass = self.pipeline.begin();
                let n = self.executors;
                let (start, bound) = match self.config.search {
                    JbsqSearch::ShortestFirst => {
                        let start = self.cursor.update(&pass, 0, |c| {
                            let old = *c;
                            *c = if old + 1 >= n { 0 } else { old + 1 };
                            old
                        });
                        (start, 1)
                    }
                    // A switch's hash unit over the request's identity (its
                    // copy number included, so a resubmitted copy lands
                    // elsewhere): no register access.
                    JbsqSearch::FirstFit => {
                        let key =
                            task.id ^ task.fn_par.rotate_left(40) ^ (client as u64).rotate_left(56);
                        (Rng::new(key).below(n), self.config.jbsq_bound)
                    }
                };
                let probe = JbsqProbe {
                    client,
                    task,
                    next: start,
                    probed: 0,
                    bound,
                    recircs: 0,
                };
                self.probe(&pass, probe, out);
            }
            PullInput::Completion { executor } => {
                if executor >= self.executors {
                    out.push(PullAction::Drop(DropReason::UnknownNode));
                    return;
                }
                let pass = self.pipeline.begin();
                self.outstanding
                    .update(&pass, executor as usize, |c| *c = c.saturating_sub(1));
            }
            PullInput::Reprobe(p) if p.next < self.executors => {
                let pass = self.pipeline.resubmit();
                self.probe(&pass, p, out);
            }
            // Draconis' and Sparrow's messages, or a probe naming an
            // executor this switch does not have (a confused driver).
            PullInput::JobSubmission(_)
            | PullInput::TaskRequest(_)
            | PullInput::GetTask { .. }
            | PullInput::Resubmit(_)
            | PullInput::Reprobe(_) => out.push(PullAction::Drop(DropReason::Unexpected)),
        }
    }

    fn probe(&mut self, pass: &Pass, mut p: JbsqProbe, out: &mut PullOutbox) {
        let bound = p.bound;
        let took = self.outstanding.update(pass, p.next as usize, |c| {
            if *c < bound {
                *c += 1;
                true
            } else {
                false
            }
        });
        if took {
            self.stats.dispatched += 1;
            out.push(PullAction::AssignTask {
                executor: p.next,
                client: p.client,
                task: p.task,
                skips: 0,
            });
            return;
        }
        if self
            .config
            .recirc_budget
            .is_some_and(|budget| p.recircs >= budget)
        {
            self.stats.dropped += 1;
            out.push(PullAction::Drop(DropReason::RecirculationBudget));
            return;
        }
        p.recircs = p.recircs.saturating_add(1);
        p.probed += 1;
        p.next = if p.next + 1 >= self.executors {
            0
        } else {
            p.next + 1
        };
        if p.probed >= self.executors {
            // A full sweep found nobody under the bound: raise it. At k every
            // queue is full; keep sweeping at k until a slot frees (§2.2).
            p.probed = 0;
            p.bound = (p.bound + 1).min(self.config.jbsq_bound);
        }
        self.stats.recirculations += 1;
        out.push(PullAction::Reprobe(p));
    }
}

impl PullDataPlane for R2p2Jbsq {
    /// One pass; the switch keeps no clock.
    #[inline]
    fn handle(&mut self, _now: Nanos, input: PullInput, out: &mut PullOutbox) {
        self.pass(input, out)
    }

    fn pipeline(&self) -> Option<&Pipeline> {
        Some(&self.pipeline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pull::{ExecutorId, TaskInfo};

    /// Feeds a request's probes back until it is dispatched; its executor.
    fn dispatch(sw: &mut R2p2Jbsq, id: u64) -> ExecutorId {
        let mut out = PullOutbox::new();
        let mut input = PullInput::Request {
            client: 0,
            task: TaskInfo::new(id),
        };
        loop {
            out.clear();
            sw.handle(Nanos::ZERO, input, &mut out);
            match out.as_slice() {
                [PullAction::AssignTask { executor, .. }] => return *executor,
                [PullAction::Reprobe(p)] => input = PullInput::Reprobe(*p),
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    /// With one executor busy and three idle, shortest-first never queues a
    /// request behind the busy one; first-fit does whenever the request's
    /// hash picks it (node-level blocking, Draconis §2.2.1), about a quarter
    /// of the time.
    #[test]
    fn first_fit_queues_behind_a_busy_executor_shortest_first_never() {
        let behind_busy = |search| {
            let config = R2p2Config {
                search,
                ..R2p2Config::default()
            };
            let mut sw = R2p2Jbsq::new(4, config);
            let busy = dispatch(&mut sw, 0);
            let mut behind = 0;
            for id in 1..400 {
                let e = dispatch(&mut sw, id);
                behind += u32::from(e == busy);
                let mut out = PullOutbox::new();
                sw.handle(Nanos::ZERO, PullInput::Completion { executor: e }, &mut out);
                assert_eq!(sw.outstanding().iter().sum::<u32>(), 1);
            }
            behind
        };
        assert_eq!(behind_busy(JbsqSearch::ShortestFirst), 0);
        let first_fit = behind_busy(JbsqSearch::FirstFit);
        assert!((60..140).contains(&first_fit), "{first_fit} of 399");
    }

    /// Without a budget a request at a full cluster keeps recirculating,
    /// never dropped by the switch, and takes the first slot that frees.
    #[test]
    fn without_a_budget_a_request_waits_for_a_slot() {
        let mut sw = R2p2Jbsq::new(
            2,
            R2p2Config {
                jbsq_bound: 1,
                ..R2p2Config::default()
            },
        );
        dispatch(&mut sw, 0);
        dispatch(&mut sw, 1);
        let mut out = PullOutbox::new();
        let mut input = PullInput::Request {
            client: 0,
            task: TaskInfo::new(2),
        };
        for _ in 0..10_000 {
            out.clear();
            sw.handle(Nanos::ZERO, input, &mut out);
            let [PullAction::Reprobe(p)] = out.as_slice() else {
                panic!("{:?}", out.as_slice())
            };
            input = PullInput::Reprobe(*p);
        }
        sw.handle(Nanos::ZERO, PullInput::Completion { executor: 1 }, &mut out);
        out.clear();
        // At most one sweep later it has the freed slot.
        for _ in 0..2 {
            sw.handle(Nanos::ZERO, input, &mut out);
            if let [PullAction::AssignTask { executor, .. }] = out.as_slice() {
                assert_eq!(*executor, 1);
                assert_eq!(sw.stats.dropped, 0);
                return;
            }
            let [PullAction::Reprobe(p)] = out.as_slice() else {
                panic!("{:?}", out.as_slice())
            };
            input = PullInput::Reprobe(*p);
            out.clear();
        }
        panic!("the freed slot was not taken");
    }
}
