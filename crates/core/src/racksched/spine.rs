//! RS-H's spine scheduler (Horus §4.1, §5.2): RackSched one level up.

use super::{pipeline_with_load_table, schedule, LoadTable, Report, ReqTableConfig, Select};
use crate::affinity::AffinityTable;
use crate::dataplane::{Action, DataPlane, DropReason, Input, NodeId, Outbox};
use crate::rng::Rng;
use crate::switch::Pipeline;

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
        }
    }

    pub fn control_add_node(&mut self, rack: NodeId) {
        self.loads.control_add(rack);
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
    fn handle(&mut self, now: u64, input: Input, out: &mut Outbox) {
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
