//! Builds each policy's schedulers for one pool (Horus §3.2, §4.1) from the
//! core's registry (`netsched_core::registry`): this module decides only
//! where each data plane sits and which nodes it covers.

use netsched_core::horus::{ConnTableConfig, IdleLink};
use netsched_core::racksched::ReqTableConfig;
use netsched_core::rng::Rng;
use netsched_core::{Layer, Plane, PlaneParams};

use crate::config::Policy;
use crate::plan::{PoolPlan, RunSetup};

/// The data-plane parameters of a run, as the config set them.
pub(crate) fn plane_params(setup: &RunSetup) -> PlaneParams {
    PlaneParams {
        samples: setup.samples,
        jbsq_bound: setup.jbsq_bound,
        // RackSched §3.6: a counter per (server, request type) with multi-queue.
        classes: if setup.multi_queue {
            setup
                .service
                .classes()
                .clamp(1, PlaneParams::MAX_CLASSES as usize) as u32
        } else {
            1
        },
        tracking: setup.load_tracking.data_plane(setup.int2_random_one_in),
        horus: setup.horus.data_plane,
        // Simulated tasks are single-packet (the common case of Horus §3.2),
        // so the connection table and ReqTable stay empty; keep them small.
        conn_table: ConnTableConfig {
            stages: 1,
            slots_per_stage: 1,
            timeout_ns: 20_000_000,
        },
        req_table: ReqTableConfig {
            stages: 1,
            slots_per_stage: 1,
            timeout_ns: 10_000_000,
        },
        ..PlaneParams::default()
    }
}

/// An upper scheduler (spine, or a flat policy's client) with the nodes it
/// schedules over and the spine it stands for.
pub(crate) struct BuiltUpper {
    pub sched: Plane,
    pub nodes: Vec<u32>,
    pub spine: u32,
}

/// The pool's uppers, and per rack the (upper, local index) its lower is
/// linked with; each rack's leaf data plane (none where a flat policy's
/// leaf only forwards) is appended to `leaves`, built in place there: a
/// `Plane` is large, and a pool has hundreds of leaves, so the caller
/// passes a vector whose allocation it reuses from pool to pool.
pub(crate) fn schedulers(
    setup: &RunSetup,
    plan: &PoolPlan,
    rack_nodes: &[Vec<u32>],
    stream: &dyn Fn(u64) -> Rng,
    leaves: &mut Vec<Option<Plane>>,
) -> (Vec<BuiltUpper>, Vec<(u32, u32)>) {
    let seed = |k: u64| stream(100 + k).next_u64();
    let params = plane_params(setup);
    let policy = setup.policy;
    let rack_sizes: Vec<u32> = rack_nodes.iter().map(|n| n.len() as u32).collect();
    let racks = plan.racks.len() as u32;
    let all_racks: Vec<u32> = (0..racks).collect();
    let first_spine = plan.spines.first().copied().unwrap_or(0);
    let leaf = |r: usize| {
        Plane::build(
            policy,
            Layer::Leaf,
            &unit_weights(rack_sizes[r]),
            seed(10_000 + r as u64),
            &params,
        )
    };
    if policy.is_flat() {
        let n: u32 = rack_sizes.iter().sum();
        // One instance per client (RackSched §4.5), each with its own stream.
        let uppers = (0..setup.clients.max(1))
            .map(|c| BuiltUpper {
                sched: flat_upper(policy, n, seed(client_stream(c)), &params),
                nodes: Vec::new(),
                spine: first_spine,
            })
            .collect();
        leaves.extend((0..plan.racks.len()).map(|_| None));
        let links = (0..plan.racks.len()).map(|r| (0, r as u32)).collect();
        return (uppers, links);
    }
    match policy {
        Policy::Horus | Policy::HorusTokens => {
            let random_idle_link = policy == Policy::Horus
                && setup.horus.idle_link == IdleLink::RandomOfPool
                && plan.spines.len() > 1;
            // §3.2: each leaf is linked to one spine; a spine schedules over its linked racks.
            // Sized up front: a `Plane` is large, so growing by doubling copies it.
            let mut uppers = Vec::with_capacity(plan.spines.len());
            let mut links = vec![(0, 0); plan.racks.len()];
            for (s, &spine) in plan.spines.iter().enumerate() {
                let linked: Vec<u32> = all_racks
                    .iter()
                    .copied()
                    .filter(|&r| plan.racks[r as usize].spine == s as u32)
                    .collect();
                if linked.is_empty() {
                    continue;
                }
                if random_idle_link {
                    // horus-sim: every spine may hold any rack's idle state,
                    // so its nodes are all the pool's racks (local = rack);
                    // its power-of-2 still covers its own group only.
                    let in_group: Vec<bool> = all_racks
                        .iter()
                        .map(|&r| plan.racks[r as usize].spine == s as u32)
                        .collect();
                    for &r in &linked {
                        links[r as usize] = (uppers.len() as u32, r);
                    }
                    uppers.push(BuiltUpper {
                        sched: Plane::horus_spine_of_group(
                            policy,
                            &rack_sizes,
                            &in_group,
                            seed(s as u64),
                            &params,
                        ),
                        nodes: all_racks.clone(),
                        spine,
                    });
                    continue;
                }
                let weights: Vec<u32> = linked.iter().map(|&r| rack_sizes[r as usize]).collect();
                for (local, &r) in linked.iter().enumerate() {
                    links[r as usize] = (uppers.len() as u32, local as u32);
                }
                uppers.push(BuiltUpper {
                    sched: Plane::build(policy, Layer::Spine, &weights, seed(s as u64), &params),
                    nodes: linked,
                    spine,
                });
            }
            leaves.extend((0..plan.racks.len()).map(|r| Some(leaf(r))));
            (uppers, links)
        }
        Policy::RsH => {
            // Horus §4.1, §5.2: every spine covers every rack; every leaf
            // reports its rack load to every spine after every reply.
            let uppers = plan
                .spines
                .iter()
                .enumerate()
                .map(|(s, &spine)| BuiltUpper {
                    sched: Plane::build(policy, Layer::Spine, &rack_sizes, seed(s as u64), &params),
                    nodes: all_racks.clone(),
                    spine,
                })
                .collect();
            leaves.extend((0..plan.racks.len()).map(|r| Some(leaf(r))));
            let links = (0..plan.racks.len())
                .map(|r| (plan.racks[r].spine, r as u32))
                .collect();
            (uppers, links)
        }
        _ => {
            // RS-LB: a stateless load balancer spreads tasks uniformly over racks.
            let uppers = vec![BuiltUpper {
                sched: Plane::build(policy, Layer::Spine, &rack_sizes, seed(0), &params),
                nodes: all_racks.clone(),
                spine: first_spine,
            }];
            leaves.extend((0..plan.racks.len()).map(|r| Some(leaf(r))));
            let links = (0..plan.racks.len()).map(|r| (0, r as u32)).collect();
            (uppers, links)
        }
    }
}

/// Client `c`'s seed stream; client 0 keeps the single scheduler's stream,
/// so one client is exactly the single-scheduler run.
fn client_stream(c: u32) -> u64 {
    if c == 0 {
        0
    } else {
        1_000_000 + c as u64
    }
}

/// A flat policy's one scheduler over the pool's `n` workers.
fn flat_upper(policy: Policy, n: u32, seed: u64, params: &PlaneParams) -> Plane {
    Plane::build(policy, Layer::Spine, &unit_weights(n), seed, params)
}

/// Weight 1 for each of `n` nodes. Only a Horus
/// spine reads the weights (its 1/w per rack, §A.2), and it gets the racks'
/// worker counts; a leaf, a flat scheduler or another policy's spine
/// schedules over its nodes without them, so a node with several cores
/// (the server models) still counts once here.
fn unit_weights(n: u32) -> Vec<u32> {
    vec![1; n as usize]
}

/// A fresh upper scheduler replacing a dead spine's (Horus §C). Racks are
/// installed one by one as the controller relinks them (Horus), or all at once.
pub(crate) fn replacement_upper(setup: &RunSetup, racks: &[u32], nodes: u32, salt: u64) -> Plane {
    let seed = Rng::derive(setup.seed, 7_777 + salt).next_u64();
    let params = plane_params(setup);
    let policy = setup.policy;
    if policy.is_flat() {
        return flat_upper(policy, nodes, seed, &params);
    }
    let weights = if policy.is_horus() {
        Vec::new()
    } else {
        unit_weights(racks.len() as u32)
    };
    Plane::build(policy, Layer::Spine, &weights, seed, &params)
}
