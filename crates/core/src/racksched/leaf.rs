//! RackSched's ToR scheduler (§3), which is also the RS-H leaf.

use super::average_16_16;
use super::{
    pipeline_with_load_table, schedule, LoadTable, LoadTracking, RackSchedConfig, Report, Select,
};
use crate::affinity::AffinityTable;
use crate::dataplane::{
    Action, DataPlane, DropReason, Input, NodeId, Notice, Outbox, Resubmit, Upstream,
};
use crate::rng::Rng;
use crate::switch::{Pipeline, RegisterArray};
use crate::Nanos;

/// RackSched's ToR scheduler over the servers of one rack (§3), optionally an
/// RS-H leaf (Horus §4.1, §5.2).
///
/// Inputs: `Task` (REQF/REQR; under Proactive a REQF also emits
/// `Resubmit(CountDispatch)`), `Reply` (removes the ReqTable entry of `task`;
/// stores `qlen` as the load of `class` at `node`, or under Proactive takes
/// one off its counter; an RS-H leaf then emits one
/// `Notify{All, LoadUpdate(avg)}`), `Resubmit(CountDispatch)` under
/// Proactive. Anything else is `Drop(Unexpected)`; in particular
/// `QueueChanged`, which would turn the delayed-update scheduler into an
/// ideal one.
#[derive(Clone, Debug)]
pub struct RackSched {
    pub(super) pipeline: Pipeline,
    pub(super) rng: Rng,
    loads: LoadTable,
    pub(super) req: AffinityTable,
    report_load: bool,
    tracking: LoadTracking,
    /// INT2: `(server, load)` of the least loaded server seen, per type
    /// (one entry with a single type); empty in the other modes.
    minimum: RegisterArray<(NodeId, u32)>,
    /// RS-H soft state ([`Self::with_soft_state`]; 0: off) and when the
    /// leaf last re-reported its load.
    soft_state_ns: u64,
    refreshed_at: u64,
}

impl RackSched {
    /// A ToR over `servers` servers `0..servers`, all at load 0.
    pub fn new(servers: u32, seed: u64, config: RackSchedConfig) -> Self {
        let minimum_len = match config.tracking {
            LoadTracking::Int2 { .. } => config.classes as usize,
            _ => 0,
        };
        // Stages: the LoadTable up to `sum`, INT2's `minimum` (its update
        // follows the LoadTable's `slot_of` verdict, and a REQF reads it
        // before the ReqTable insert), the ReqTable, the LoadTable's `servers`.
        let (pipeline, rng, loads, (minimum, req)) =
            pipeline_with_load_table(servers, seed, config.samples, config.classes, |layout| {
                let stage = layout.stage();
                // No reply seen yet: any first report replaces the entry (the
                // artifact starts at load 9999).
                let minimum = layout.array(stage, "minimum", minimum_len, (0, u32::MAX));
                (minimum, config.req_table.build(layout))
            });
        RackSched {
            pipeline,
            rng,
            loads,
            req,
            report_load: config.report_load,
            tracking: config.tracking,
            minimum,
            soft_state_ns: 0,
            refreshed_at: 0,
        }
    }

    /// RS-H soft state: an RS-H leaf re-reports its rack average to every
    /// spine each `ns / 4` from its control-plane timer
    /// ([`Self::control_tick`]), as a Horus leaf refreshes its spine; the
    /// spine forgets a load not refreshed for `ns`
    /// ([`crate::racksched::RackSchedSpine::with_soft_state`]). Without it a
    /// rack's load is re-reported only after its next reply.
    pub fn with_soft_state(mut self, ns: u64) -> Self {
        self.soft_state_ns = ns;
        self
    }

    /// RS-H soft state: the periodic report when due (a no-op for a ToR
    /// that reports nothing, or with soft state off).
    pub fn control_tick(&mut self, now: u64, out: &mut Outbox) {
        let every = self.soft_state_ns / 4;
        if !self.report_load || every == 0 || now.saturating_sub(self.refreshed_at) < every {
            return;
        }
        self.refreshed_at = now;
        out.push(Action::Notify {
            to: Upstream::All,
            notice: Notice::LoadUpdate(self.loads.average()),
        });
    }

    /// INT2's register entry for a request type: its own with multi-queue,
    /// else the single entry (unconfigured types share entry 0).
    fn minimum_index(&self, class: u8) -> usize {
        if (class as u32) < self.loads.classes() {
            class as usize
        } else {
            0
        }
    }

    /// The RS-H leaf: RackSched that reports its rack average to every spine
    /// after each reply.
    pub fn rs_h_leaf(servers: u32, seed: u64, config: RackSchedConfig) -> Self {
        RackSched::new(
            servers,
            seed,
            RackSchedConfig {
                report_load: true,
                ..config
            },
        )
    }

    fn on_reply(&mut self, node: NodeId, qlen: u32, class: u8, task: u64, out: &mut Outbox) {
        let pass = self.pipeline.begin();
        // `count` shares the first stage with `slot_of`; the average needs it.
        let active = if self.report_load {
            self.loads.active(&pass)
        } else {
            0
        };
        let report = match self.tracking {
            // The switch counts for itself; LOAD is not read.
            LoadTracking::Proactive => self.loads.adjust(&pass, node, class, -1),
            LoadTracking::Int1 | LoadTracking::Int3 | LoadTracking::Int2 { .. } => {
                self.loads.report(&pass, node, class, qlen)
            }
        };
        if let (LoadTracking::Int2 { .. }, Report::Updated { .. }) = (self.tracking, report) {
            // The artifact's `lowest_load.p4`: a load no larger than the
            // recorded one takes over; the recorded server refreshes its own.
            let index = self.minimum_index(class);
            self.minimum.update(&pass, index, |(min_node, min_load)| {
                if qlen <= *min_load {
                    *min_node = node;
                    *min_load = qlen;
                } else if *min_node == node {
                    *min_load = qlen;
                }
            });
        }
        // Alg. 1 line 7. A reply from a removed server still frees its entry.
        // The ReqTable's stages follow the LoadTable's.
        self.req.remove(&pass, task);
        match report {
            Report::Updated { sum } => {
                if self.report_load {
                    let avg = average_16_16(sum, active);
                    out.push(Action::Notify {
                        to: Upstream::All,
                        notice: Notice::LoadUpdate(avg),
                    });
                }
            }
            Report::UnknownNode => out.push(Action::Drop(DropReason::UnknownNode)),
            Report::BadClass => out.push(Action::Drop(DropReason::Unexpected)),
        }
    }

    /// Proactive, second pass: the dispatched server's counter goes up.
    fn on_count_dispatch(&mut self, node: NodeId, class: u8, out: &mut Outbox) {
        let pass = self.pipeline.resubmit();
        match self.loads.adjust(&pass, node, class, 1) {
            Report::Updated { .. } => {}
            // Removed between the passes: nothing left to count on.
            Report::UnknownNode => out.push(Action::Drop(DropReason::UnknownNode)),
            Report::BadClass => out.push(Action::Drop(DropReason::Unexpected)),
        }
    }

    // ---- control plane ----

    /// A server joined (§3.4 reconfiguration): schedulable at once, load 0.
    pub fn control_add_node(&mut self, node: NodeId) {
        self.loads.control_add(node);
        // INT2 entries that name no live server (none was active) start here.
        for i in 0..self.minimum.len() {
            if !self.loads.contains(self.minimum.peek(i).0) {
                self.minimum.control_write(i, (node, u32::MAX));
            }
        }
    }

    /// A server failed or left: no new requests go to it, and ReqTable entries
    /// pointing at it are deleted (§3.4 "unplanned server removal").
    pub fn control_remove_node(&mut self, node: NodeId) {
        if self.loads.control_remove(node) {
            self.req.control_forget_node(node);
            // INT2 must not keep herding onto a server that is gone: the
            // entry restarts on a live one, replaced by the next reply.
            let live = self.loads.first_active().unwrap_or(0);
            for i in 0..self.minimum.len() {
                if self.minimum.peek(i).0 == node {
                    self.minimum.control_write(i, (live, u32::MAX));
                }
            }
        }
    }

    /// §3.2: the control plane periodically removes stale ReqTable entries.
    pub fn control_sweep(&mut self, now: u64) -> u64 {
        self.req.control_sweep(now)
    }

    // ---- views ----

    pub fn load_table(&self) -> &LoadTable {
        &self.loads
    }

    pub fn req_table(&self) -> &AffinityTable {
        &self.req
    }

    /// Sum of the LoadTable (all servers, all types).
    pub fn total_load(&self) -> u64 {
        self.loads.sum()
    }

    /// Rack average load in 16.16, what an RS-H leaf reports.
    pub fn average_load(&self) -> u32 {
        self.loads.average()
    }

    pub fn reports_load(&self) -> bool {
        self.report_load
    }

    pub fn tracking(&self) -> LoadTracking {
        self.tracking
    }

    /// INT2's recorded `(server, load)` for `class` (`None` in other modes).
    pub fn recorded_minimum(&self, class: u8) -> Option<(NodeId, u32)> {
        (!self.minimum.is_empty()).then(|| self.minimum.peek(self.minimum_index(class)))
    }
}

impl DataPlane for RackSched {
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        let now = now.get();
        match input {
            Input::Task(task) => {
                let pass = self.pipeline.begin();
                let select = match self.tracking {
                    LoadTracking::Int2 { random_one_in } => Select::Minimum {
                        index: self.minimum_index(task.class),
                        register: &mut self.minimum,
                        random_one_in,
                    },
                    _ => Select::PowerOfK,
                };
                let sent = schedule(
                    &pass,
                    now,
                    &mut self.loads,
                    &mut self.req,
                    &mut self.rng,
                    task,
                    false,
                    select,
                    out,
                );
                if let (LoadTracking::Proactive, Some(node)) = (self.tracking, sent) {
                    out.push(Action::Resubmit(Resubmit::CountDispatch {
                        node,
                        class: task.class,
                    }));
                }
            }
            Input::Reply {
                node,
                qlen,
                class,
                task,
            } => self.on_reply(node, qlen, class, task, out),
            Input::Resubmit(Resubmit::CountDispatch { node, class })
                if self.tracking == LoadTracking::Proactive =>
            {
                self.on_count_dispatch(node, class, out)
            }
            _ => out.push(Action::Drop(DropReason::Unexpected)),
        }
    }

    fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
}
