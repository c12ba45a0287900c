//! R2P2's JBSQ(k) in-switch scheduler (ATC'19), as Draconis describes and
//! evaluates it (§2.2, §8.3).
//!
//! The switch keeps one outstanding-task counter per executor. A task looks
//! for an executor with fewer than `bound` outstanding tasks, starting with
//! `bound = 1` (an idle executor) and raising the bound to `k` after a full
//! sweep at each bound. A register array allows one access per pass, so each
//! pass probes one executor with one conditional increment (`if c < bound
//! { c += 1 }`) and recirculates to probe the next: O(n) passes per bound,
//! O(n·k) worst case (§2.2). When every executor holds `k` tasks the packet
//! keeps recirculating (sweeping at bound k) until a slot frees,
//! and is dropped once it has used its recirculation budget (§8.3: "If a
//! switch does not have the capacity to recirculate a packet, it simply drops
//! it"), counted as [`DropReason::RecirculationBudget`].
//!
//! A completion reported by an executor decrements its counter.
//!
//! Each sweep starts at a rotating cursor (one read-and-increment of a
//! one-cell array on the first pass), so that simultaneous arrivals at low
//! load do not all probe executor 0 first.

use super::{ClientId, ExecutorId, PullAction, PullDataPlane, PullInput, PullOutbox, TaskInfo};
use crate::dataplane::DropReason;
use crate::switch::{Layout, Pass, Pipeline, RegisterArray};

/// R2P2 configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct R2p2Config {
    /// JBSQ bound: at most this many tasks at an executor, one running
    /// (§8: 3).
    pub jbsq_bound: u32,
    /// Recirculations a task may use before it is dropped.
    pub recirc_budget: u32,
}

impl Default for R2p2Config {
    fn default() -> Self {
        R2p2Config {
            jbsq_bound: 3,
            recirc_budget: 1024,
        }
    }
}

/// What a recirculated R2P2 request carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JbsqProbe {
    pub client: ClientId,
    pub task: TaskInfo,
    /// The executor this pass probes.
    pub next: ExecutorId,
    /// Executors probed at the current bound.
    pub probed: u32,
    /// Current bound, 1..=k.
    pub bound: u32,
    /// Recirculations used so far.
    pub recircs: u32,
}

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
                let start = self.cursor.update(&pass, 0, |c| {
                    let old = *c;
                    *c = if old + 1 >= n { 0 } else { old + 1 };
                    old
                });
                let probe = JbsqProbe {
                    client,
                    task,
                    next: start,
                    probed: 0,
                    bound: 1,
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
        if p.recircs >= self.config.recirc_budget {
            self.stats.dropped += 1;
            out.push(PullAction::Drop(DropReason::RecirculationBudget));
            return;
        }
        p.recircs += 1;
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
    fn handle(&mut self, _now: u64, input: PullInput, out: &mut PullOutbox) {
        self.pass(input, out)
    }

    fn pipeline(&self) -> Option<&Pipeline> {
        Some(&self.pipeline)
    }
}
