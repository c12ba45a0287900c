//! The engine recomputes only the component of flows a change can affect
//! (and skips links that cannot bind). Against the from-scratch reference
//! (`full_recompute`: every active flow re-keyed and water-filled at every
//! change), random topologies and tasks must give the same completion
//! times for every policy.

use netsched_flowsim::config::TopologyConfig;
use netsched_flowsim::engine::{Engine, EngineOpts};
use netsched_flowsim::topology::Topology;
use netsched_flowsim::workload::{FlowSpec, TaskSpec, NO_GATE};
use netsched_flowsim::Policy;
use proptest::prelude::*;

fn run(topo: &Topology, policy: Policy, full: bool, tasks: &[TaskSpec]) -> Vec<u64> {
    let mut e = Engine::new(
        topo.clone(),
        EngineOpts {
            policy,
            heavy_threshold: 150_000.0,
        },
    );
    e.full_recompute = full;
    // The incremental engine checks its rate groups and every fast-path
    // result against a from-scratch recomputation as it goes.
    e.check = !full;
    let mut r = e.run(tasks.iter().cloned());
    r.sort_by_key(|t| t.index);
    r.iter().map(|t| t.completion_ns).collect()
}

/// (arrival µs, [(src, dst, KB, second stage)]) per task; a second-stage
/// flow starts once the task's first-stage flows are done (two-stage
/// partition-aggregate).
fn tasks_strategy(hosts: u32) -> impl Strategy<Value = Vec<TaskSpec>> {
    let flow = (0..hosts, 0..hosts, 1u64..300, any::<bool>());
    let task = (0u64..3_000, prop::collection::vec(flow, 1..6));
    prop::collection::vec(task, 1..8).prop_map(|mut ts| {
        ts.sort_by_key(|t| t.0);
        ts.into_iter()
            .enumerate()
            .map(|(i, (at, flows))| {
                let any_first = flows.iter().any(|f| !f.3);
                TaskSpec {
                    arrival_ns: at * 1_000,
                    task_id: i as u64 + 1,
                    flows: flows
                        .into_iter()
                        .map(|(src, dst, kb, second)| {
                            let second = second && any_first;
                            FlowSpec {
                                src,
                                dst,
                                bytes: kb * 1_000,
                                after: if second { 0 } else { NO_GATE },
                                feeds: if second || !any_first { NO_GATE } else { 0 },
                                delay_ns: 0,
                            }
                        })
                        .collect(),
                }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn component_recompute_matches_from_scratch(
        oversub in prop::sample::select(vec![1.0, 2.0, 4.0]),
        tasks in tasks_strategy(12),
    ) {
        let topo = Topology::new(&TopologyConfig {
            pods: 2,
            racks_per_pod: 2,
            servers_per_rack: 3,
            host_gbps: 1.0,
            tor_oversub: oversub,
            agg_oversub: 2.0,
        });
        for p in [Policy::Fair, Policy::Pfabric, Policy::Orchestra, Policy::Stf, Policy::Baraat] {
            let inc = run(&topo, p, false, &tasks);
            let full = run(&topo, p, true, &tasks);
            prop_assert_eq!(inc.len(), full.len());
            for (a, b) in inc.iter().zip(&full) {
                // Float summation order differs between the two: a few ns.
                prop_assert!(a.abs_diff(*b) <= 1 + b / 1_000_000, "{:?}: {:?} vs {:?}", p, inc, full);
            }
        }
    }
}
