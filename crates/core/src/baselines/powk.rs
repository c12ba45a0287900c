//! Power-of-k with instant updates: the ideal counterpart of RackSched's
//! delayed updates (Horus App. C contrasts the two update disciplines).

use crate::affinity::AffinityTable;
use crate::dataplane::{Action, DataPlane, Decision, DropReason, Input, NodeId, Outbox};
use crate::racksched::{pipeline_with_load_table, LoadTable, Report, ReqTableConfig};
use crate::rng::Rng;
use crate::switch::Pipeline;
use crate::Nanos;

/// Power-of-k over loads the driver updates with zero delay through
/// `QueueChanged` (an oracle feed, not packets). The sampling itself obeys the
/// switch model: k copies of RackSched's [`LoadTable`], one read per copy.
///
/// Inputs: `Task`, `QueueChanged` (unknown node: `Drop(UnknownNode)`);
/// `Reply` is ignored; others `Drop(Unexpected)`.
#[derive(Clone, Debug)]
pub struct PowKInstant {
    pipeline: Pipeline,
    rng: Rng,
    loads: LoadTable,
    affinity: AffinityTable,
}

impl PowKInstant {
    /// Nodes `0..nodes` with empty queues, `samples` distinct samples per task.
    pub fn new(nodes: u32, samples: u32, seed: u64) -> Self {
        // Stages: the LoadTable to `sum`, the affinity table, `servers`.
        let (pipeline, rng, loads, affinity) =
            pipeline_with_load_table(nodes, seed, samples, 1, |layout| {
                ReqTableConfig::default().build(layout)
            });
        PowKInstant {
            pipeline,
            rng,
            loads,
            affinity,
        }
    }

    pub fn load_table(&self) -> &LoadTable {
        &self.loads
    }
}

membership_with_affinity!(PowKInstant, loads, control_add, control_remove);
affinity_sweep!(PowKInstant);

impl DataPlane for PowKInstant {
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        match input {
            Input::Task(task) => {
                self.affinity
                    .dispatch(&mut self.pipeline, now, task, out, |pass| {
                        let active = self.loads.active(pass);
                        if active == 0 {
                            return None;
                        }
                        let (node, _) = self.loads.choose(pass, &mut self.rng, active, 0);
                        Some((node, Decision::Sampled))
                    });
            }
            Input::QueueChanged { node, qlen } => {
                let pass = self.pipeline.begin();
                if self.loads.report(&pass, node, 0, qlen) == Report::UnknownNode {
                    out.push(Action::Drop(DropReason::UnknownNode));
                }
            }
            Input::Reply { .. } => {}
            _ => out.push(Action::Drop(DropReason::Unexpected)),
        }
    }

    fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    #[test]
    fn instant_updates_avoid_the_herding_of_delayed_ones() {
        // k = n: every task sees every queue. With the driver reporting each
        // dispatch at once, four tasks spread over the four empty nodes.
        let mut p = PowKInstant::new(4, 4, 1);
        let mut used = Vec::new();
        for id in 0..4 {
            let node = dispatched(&mut p, 0, Input::Task(task(id)));
            assert!(
                !used.contains(&node),
                "node {node} picked twice while others are empty"
            );
            used.push(node);
            run(&mut p, 0, Input::QueueChanged { node, qlen: 1 });
        }
        assert!(run(
            &mut p,
            0,
            Input::Reply {
                node: 0,
                qlen: 9,
                class: 0,
                task: 0
            }
        )
        .is_empty());
        assert_eq!(
            p.load_table().load(0),
            Some(1),
            "replies do not feed the oracle view"
        );
        assert_eq!(
            run(&mut p, 0, Input::QueueChanged { node: 9, qlen: 1 }),
            vec![Action::Drop(DropReason::UnknownNode)]
        );
    }
}
