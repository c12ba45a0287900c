//! RS-H's spine scheduler (Horus §4.1, §5.2): RackSched one level up.

use super::{pipeline_with_load_table, schedule, LoadTable, Report, ReqTableConfig, Select};
use crate::affinity::AffinityTable;
use crate::dataplane::{Action, DataPlane, DropReason, Input, NodeId, Outbox};
use crate::rng::Rng;
use crate::switch::Pipeline;
use crate::Nanos;

/// RS-H's spine scheduler (Horus §4.1): RackSched one level up, power-of-k
/// over rack average loads (16.16) that only the leaves' `LoadUpdate`
/// messages change; nothing is added at dispatch.
///
/// Replies do not pass through a spine, so its ReqTable entry for a
/// multi-packet task is freed by the task's last packet (Horus §A.4) or by
/// expiry. Inputs: `Task`, `LoadUpdate`; anything else is `Drop(Unexpected)`.
#[derive(Clone, Debug)]
pub struct RackSchedSpine {
    pipeline: Pipeline,
    rng: Rng,
    loads: LoadTable,
    req: AffinityTable,
    /// Soft state ([`Self::with_soft_state`]; 0: off): when each rack's
    /// leaf last reported, and whether its load expired since. A
    /// control-plane table, as the Horus spine's.
    soft_state_ns: u64,
    heard: Vec<u64>,
    expired: Vec<bool>,
}

impl RackSchedSpine {
    /// A spine over racks `0..racks`, all at load 0, sampling `samples` racks.
    pub fn new(racks: u32, seed: u64, samples: u32, req_table: ReqTableConfig) -> Self {
        // Stages as the ToR's: the LoadTable, the ReqTable, `servers`.
        let (pipeline, rng, loads, req) =
            pipeline_with_load_table(racks, seed, samples, 1, |layout| req_table.build(layout));
        RackSchedSpine {
            pipeline,
            rng,
            loads,
            req,
            soft_state_ns: 0,
            heard: vec![0; racks as usize],
            expired: vec![false; racks as usize],
        }
    }

    /// Soft state, as the Horus spine's (`HorusOptions::soft_state_ns`): a
    /// rack whose leaf sent no LOAD_REPORT for `ns` is believed at load 0
    /// again, so a forged or lost report lasts at most that long; an RS-H
    /// leaf with the same bound re-reports every `ns / 4`
    /// ([`crate::racksched::RackSched::control_tick`]).
    pub fn with_soft_state(mut self, ns: u64) -> Self {
        self.soft_state_ns = ns;
        self
    }

    /// Soft state: forgets the load of every rack not heard from for the
    /// bound (a report of 0, the load of a rack that just joined).
    pub fn control_expire(&mut self, now: u64) {
        let bound = self.soft_state_ns;
        if bound == 0 {
            return;
        }
        for r in 0..self.heard.len() {
            let rack = r as NodeId;
            if self.expired[r]
                || !self.loads.contains(rack)
                || now.saturating_sub(self.heard[r]) < bound
            {
                continue;
            }
            self.expired[r] = true;
            let pass = self.pipeline.begin();
            self.loads.report(&pass, rack, 0, 0);
        }
    }

    /// Soft state: how many racks' loads are expired now.
    pub fn expired_racks(&self) -> usize {
        self.expired.iter().filter(|e| **e).count()
    }

    pub fn control_add_node(&mut self, rack: NodeId) {
        self.loads.control_add(rack);
        if rack as usize >= self.heard.len() {
            self.heard.resize(rack as usize + 1, 0);
            self.expired.resize(rack as usize + 1, false);
        }
    }

    /// Leaf or link failure: no new tasks to the rack; its affinity entries go.
    pub fn control_remove_node(&mut self, rack: NodeId) {
        if self.loads.control_remove(rack) {
            self.req.control_forget_node(rack);
        }
    }

    pub fn control_sweep(&mut self, now: u64) -> u64 {
        self.req.control_sweep(now)
    }

    pub fn load_table(&self) -> &LoadTable {
        &self.loads
    }

    pub fn req_table(&self) -> &AffinityTable {
        &self.req
    }
}

impl DataPlane for RackSchedSpine {
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        let now = now.get();
        match input {
            Input::Task(task) => {
                let pass = self.pipeline.begin();
                schedule(
                    &pass,
                    now,
                    &mut self.loads,
                    &mut self.req,
                    &mut self.rng,
                    task,
                    true,
                    Select::PowerOfK,
                    out,
                );
            }
            Input::LoadUpdate { node, load } => {
                let pass = self.pipeline.begin();
                if self.loads.report(&pass, node, 0, load) == Report::UnknownNode {
                    out.push(Action::Drop(DropReason::UnknownNode));
                } else if self.soft_state_ns > 0 {
                    if let Some(h) = self.heard.get_mut(node as usize) {
                        *h = now;
                        self.expired[node as usize] = false;
                    }
                }
            }
            _ => out.push(Action::Drop(DropReason::Unexpected)),
        }
    }

    fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// A LOAD report writes one load register (or is dropped for an unknown
    /// rack): Alg. 1's update, nothing emitted.
    fn writes_state_only(&self, input: &Input) -> bool {
        matches!(input, Input::LoadUpdate { .. })
    }
}
