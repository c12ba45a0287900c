//! Builds each policy's schedulers for one pool (Horus §3.2, §4.1).

use netsched_core::baselines::{
    CentralQueue, IdleOnly, Jbsq, Jiq, Jsq, PowKInstant, RandomDispatch, RoundRobin, UniformLb,
};
use netsched_core::horus::{HorusLeaf, HorusSpine};
use netsched_core::racksched::{RackSched, RackSchedConfig, RackSchedSpine, ReqTableConfig};
use netsched_core::rng::Rng;

use crate::config::Policy;
use crate::pool::{BuiltUpper, PoolPlan, RunSetup};
use crate::sched::{conn_table, Lower, Upper};

/// Single-packet tasks never insert into a ReqTable; keep it small.
fn req_table() -> ReqTableConfig {
    ReqTableConfig {
        stages: 1,
        slots_per_stage: 1,
        timeout_ns: 10_000_000,
    }
}

fn rs_config(setup: &RunSetup, report_load: bool) -> RackSchedConfig {
    RackSchedConfig {
        k: setup.k,
        // RackSched §3.6: a counter per (server, request type) with multi-queue.
        classes: if setup.multi_queue {
            setup.service.classes().clamp(1, 256) as u32
        } else {
            1
        },
        req_table: req_table(),
        report_load,
        tracking: setup.load_tracking.data_plane(setup.int2_random_one_in),
    }
}

/// `horus` runs the configured mechanism (`[schedulers.horus]`);
/// `horus-tokens` is netsched's idle-token variant.
fn horus_options(setup: &RunSetup) -> netsched_core::horus::HorusOptions {
    match setup.policy {
        Policy::HorusTokens => netsched_core::horus::HorusOptions::idle_tokens(),
        _ => setup.horus.data_plane,
    }
}

/// A rack's lower scheduler and the (upper, local index) it is linked with.
pub(crate) type LinkedLower = (Lower, (u32, u32));

/// The pool's uppers, and per rack its lower with the (upper, local index) it
/// is linked with.
pub(crate) fn schedulers(
    setup: &RunSetup,
    plan: &PoolPlan,
    rack_nodes: &[Vec<u32>],
    stream: &dyn Fn(u64) -> Rng,
) -> (Vec<BuiltUpper>, Vec<LinkedLower>) {
    let seed = |k: u64| stream(100 + k).next_u64();
    let rack_sizes: Vec<u32> = rack_nodes.iter().map(|n| n.len() as u32).collect();
    let racks = plan.racks.len() as u32;
    let all_racks: Vec<u32> = (0..racks).collect();
    let first_spine = plan.spines.first().copied().unwrap_or(0);
    let leaf_seed = |r: usize| seed(10_000 + r as u64);
    match setup.policy {
        Policy::Horus | Policy::HorusTokens => {
            let options = horus_options(setup);
            let random_idle_link = setup.policy == Policy::Horus
                && setup.horus.idle_link == netsched_core::horus::IdleLink::RandomOfPool
                && plan.spines.len() > 1;
            // §3.2: each leaf is linked to one spine; a spine schedules over its linked racks.
            let mut uppers = Vec::new();
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
                        sched: Upper::Horus(HorusSpine::with_group(
                            &rack_sizes,
                            &in_group,
                            seed(s as u64),
                            conn_table(),
                            options,
                        )),
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
                    sched: Upper::Horus(HorusSpine::with_options(
                        &weights,
                        seed(s as u64),
                        conn_table(),
                        options,
                    )),
                    nodes: linked,
                    spine,
                });
            }
            let lowers = rack_sizes
                .iter()
                .enumerate()
                .map(|(r, &w)| {
                    (
                        Lower::Horus(HorusLeaf::with_options(
                            w,
                            leaf_seed(r),
                            conn_table(),
                            options,
                        )),
                        links[r],
                    )
                })
                .collect();
            (uppers, lowers)
        }
        Policy::RsH => {
            // Horus §4.1, §5.2: every spine covers every rack; every leaf
            // reports its rack load to every spine after every reply.
            let uppers = plan
                .spines
                .iter()
                .enumerate()
                .map(|(s, &spine)| BuiltUpper {
                    sched: Upper::RsSpine(RackSchedSpine::new(
                        racks,
                        seed(s as u64),
                        setup.k,
                        req_table(),
                    )),
                    nodes: all_racks.clone(),
                    spine,
                })
                .collect();
            let lowers = rack_sizes
                .iter()
                .enumerate()
                .map(|(r, &w)| {
                    let leaf = RackSched::rs_h_leaf(w, leaf_seed(r), rs_config(setup, true));
                    (Lower::Rs(leaf), (plan.racks[r].spine, r as u32))
                })
                .collect();
            (uppers, lowers)
        }
        Policy::RsLb | Policy::Racksched => {
            // A stateless load balancer spreads tasks uniformly over racks.
            let uppers = vec![BuiltUpper {
                sched: Upper::Lb(UniformLb::new(racks, seed(0))),
                nodes: all_racks.clone(),
                spine: first_spine,
            }];
            let lowers = rack_sizes
                .iter()
                .enumerate()
                .map(|(r, &w)| {
                    (
                        Lower::Rs(RackSched::new(w, leaf_seed(r), rs_config(setup, false))),
                        (0, r as u32),
                    )
                })
                .collect();
            (uppers, lowers)
        }
        flat => {
            let n: u32 = rack_sizes.iter().sum();
            // One instance per client (RackSched §4.5), each with its own stream.
            let uppers = (0..setup.clients.max(1))
                .map(|c| BuiltUpper {
                    sched: flat_upper(setup, flat, n, seed(client_stream(c))),
                    nodes: Vec::new(),
                    spine: first_spine,
                })
                .collect();
            let lowers = (0..plan.racks.len())
                .map(|r| (Lower::Forward, (0, r as u32)))
                .collect();
            (uppers, lowers)
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

fn flat_upper(setup: &RunSetup, policy: Policy, n: u32, seed: u64) -> Upper {
    match policy {
        Policy::Random => Upper::Random(RandomDispatch::new(n, seed)),
        Policy::RoundRobin => Upper::RoundRobin(RoundRobin::new(n, seed)),
        Policy::Jsq => Upper::Jsq(Jsq::new(n, seed)),
        Policy::Jiq => Upper::Jiq(Jiq::new(n, seed)),
        Policy::Pow2Instant => Upper::PowK(PowKInstant::new(n, setup.k, seed)),
        Policy::Pow2Delayed => Upper::Delayed(RackSched::new(n, seed, rs_config(setup, false))),
        Policy::IdleOnly => Upper::IdleOnly(IdleOnly::new(n, seed)),
        Policy::Central => {
            let _ = seed;
            Upper::Central(CentralQueue::central(n, CentralQueue::DEFAULT_CAPACITY))
        }
        // Deterministic (longest-waiting node first): no seed needed.
        Policy::R2p2 => Upper::Jbsq(Jbsq::new(n, setup.jbsq_bound, Jbsq::DEFAULT_CAPACITY)),
        Policy::Horus | Policy::HorusTokens | Policy::RsH | Policy::RsLb | Policy::Racksched => {
            unreachable!("layered policy")
        }
    }
}

/// A fresh upper scheduler replacing a dead spine's (Horus §C). Racks are
/// installed one by one as the controller relinks them (Horus), or all at once.
pub(crate) fn replacement_upper(setup: &RunSetup, racks: &[u32], nodes: u32, salt: u64) -> Upper {
    let seed = Rng::derive(setup.seed, 7_777 + salt).next_u64();
    let n = racks.len() as u32;
    match setup.policy {
        Policy::Horus | Policy::HorusTokens => Upper::Horus(HorusSpine::with_options(
            &[],
            seed,
            conn_table(),
            horus_options(setup),
        )),
        Policy::RsH => Upper::RsSpine(RackSchedSpine::new(n, seed, setup.k, req_table())),
        Policy::RsLb | Policy::Racksched => Upper::Lb(UniformLb::new(n, seed)),
        flat => flat_upper(setup, flat, nodes, seed),
    }
}
