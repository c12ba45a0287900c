//! Pool-level invariants checked event by event: client-side scheduling
//! (RackSched §4.5 "Client(N)") and R2P2's JBSQ bound.

use super::*;
use crate::config::{DelayDist, LoadTrackingMode};
use crate::workload::{RateSchedule, ServiceDist, ServiceSampler};

/// One rack of `servers` servers with `cores` cores each.
fn plan(servers: u32, cores: u32) -> PoolPlan {
    PoolPlan {
        pool_id: 0,
        racks: vec![RackPlan {
            leaf: 0,
            spine: 0,
            servers: (0..servers).map(|s| (s, cores)).collect(),
        }],
        spines: vec![0],
    }
}

fn setup<'a>(
    policy: Policy,
    model: WorkerModel,
    clients: u32,
    load: f64,
    service: &'a ServiceSampler,
    hops: &'a (dyn Fn(u32, u32) -> u32 + Sync),
) -> RunSetup<'a> {
    RunSetup {
        policy,
        seed: 5,
        service,
        schedule: RateSchedule::from_us_pairs(load, &[]).unwrap(),
        end_ns: 20_000_000,
        warmup_ns: 0,
        hop_delay: DelayDist::Exp { mean_us: 2.0 },
        loss: 0.0,
        resubmit_ns: 0,
        worker_model: model,
        ps_slice_ns: 250_000,
        heartbeat_timeout_ns: 1_000_000,
        failure_detection_ns: 0,
        samples: 2,
        multi_queue: false,
        load_tracking: LoadTrackingMode::Int1,
        int2_random_one_in: 4,
        horus: crate::config::HorusConfig::default().resolve(),
        clients,
        jbsq_bound: 3,
        failures: &[],
        imbalance_interval_ns: 0,
        hops,
        eager_state_writes: false,
    }
}

#[test]
fn each_client_learns_only_from_replies_to_its_own_tasks() {
    let clients = 4u32;
    let service = ServiceDist::Exp { mean_us: 50.0 }.build().unwrap();
    let hops = |_: u32, _: u32| 1;
    let setup = setup(
        Policy::Pow2Delayed,
        WorkerModel::ServerPs,
        clients,
        0.9,
        &service,
        &hops,
    );
    let plan = plan(8, 8);
    let mut sim = PoolSim::new(&setup, &plan);
    assert_eq!(sim.uppers.len(), clients as usize);
    let first = sim.arrivals.next_arrival(0, &mut sim.rng_work).unwrap();
    sim.q.at(first, Ev::Arrival);

    let nodes = 8u32;
    // What each client's load table must hold: the LOAD of the last reply
    // it received from each server (RackSched §3.2 Alg. 1 line 8).
    let mut expected = vec![vec![0u32; nodes as usize]; clients as usize];
    let mut sender_of_seq = Vec::new();
    let mut replies = vec![0u64; clients as usize];
    let mut disagreements = 0u64;
    let table = |sim: &PoolSim, u: usize, n: u32| match &sim.uppers[u].sched {
        Plane::RackSched(rs) => rs.load_table().load(n).unwrap(),
        _ => unreachable!("pow2-delayed clients are RackSched instances"),
    };
    while let Some((now, ev)) = sim.q.pop() {
        if let Ev::ReplyAtUpper {
            upper,
            node,
            qlen,
            task,
            ..
        } = ev
        {
            let seq = (task >> 32) as usize;
            assert_eq!(
                sender_of_seq[seq], upper,
                "the reply to task {seq} reached a client that did not send it"
            );
            expected[upper as usize][node as usize] = qlen;
            replies[upper as usize] += 1;
        }
        let arrival = matches!(ev, Ev::Arrival);
        sim.step(now, ev);
        if arrival {
            let seq = sim.submitted as usize;
            let rec = sim
                .tasks
                .iter()
                .find(|t| t.live && t.seq == seq as u64)
                .expect("the new task is live");
            sender_of_seq.resize(seq + 1, u32::MAX);
            sender_of_seq[seq] = rec.upper;
        }
        for (u, exp) in expected.iter().enumerate() {
            for n in 0..nodes {
                assert_eq!(table(&sim, u, n), exp[n as usize], "client {u}, server {n}");
            }
        }
        disagreements += (0..nodes)
            .filter(|&n| {
                (1..clients as usize).any(|u| expected[u][n as usize] != expected[0][n as usize])
            })
            .count() as u64;
    }
    assert_eq!(sim.metrics.completed_total(), sim.submitted);
    let total: u64 = replies.iter().sum();
    assert_eq!(total, sim.submitted, "one reply per task, to one client");
    for (u, &r) in replies.iter().enumerate() {
        // Equal rates: each client sends a quarter of the tasks (±20 %).
        let share = r as f64 / total as f64;
        assert!(
            (0.2..0.3).contains(&share),
            "client {u} got {share:.3} of the replies"
        );
    }
    assert!(disagreements > 0, "the clients' views never differed");
}

#[test]
fn r2p2_never_has_more_than_the_bound_at_a_worker() {
    // Bimodal(90-10) at load 0.97 on 8 single-core FCFS workers: workers
    // often hold the bound, and never more (running and queued) however
    // long their head task takes.
    let service = ServiceDist::Preset {
        name: crate::workload::ServicePreset::RsBimodal,
    }
    .build()
    .unwrap();
    let hops = |_: u32, _: u32| 1;
    let setup = setup(Policy::R2p2, WorkerModel::Fcfs, 1, 0.97, &service, &hops);
    let plan = plan(2, 4);
    let mut sim = PoolSim::new(&setup, &plan);
    let first = sim.arrivals.next_arrival(0, &mut sim.rng_work).unwrap();
    sim.q.at(first, Ev::Arrival);
    let (mut full, mut steps) = (0u64, 0u64);
    while let Some((now, ev)) = sim.q.pop() {
        sim.step(now, ev);
        steps += 1;
        let mut at_bound = 0;
        for n in 0..sim.nodes.len() as u32 {
            let q = sim.nodes.qlen(n);
            assert!(q <= setup.jbsq_bound, "worker {n} holds {q} tasks");
            at_bound += (q == setup.jbsq_bound) as u32;
        }
        full += (at_bound > 0) as u64;
    }
    assert_eq!(sim.metrics.completed_total(), sim.submitted);
    assert!(
        full * 10 > steps,
        "the bound was rarely reached ({full} of {steps} steps)"
    );
}

/// Horus §A.2: when a rack loses workers the controller installs its new
/// 1/w at the spine. Before the fix the simulator did so only when workers
/// were added, so a spine kept weighting a shrunken rack as if it were whole.
#[test]
fn spine_gets_the_new_factor_when_workers_leave() {
    let service = ServiceDist::Exp { mean_us: 50.0 }.build().unwrap();
    let hops = |_: u32, _: u32| 1;
    let failures = [crate::config::FailureEvent::RemoveWorkers {
        at_us: 10.0,
        pool: 0,
        rack: 0,
        count: 3,
    }];
    let mut setup = setup(Policy::Horus, WorkerModel::Fcfs, 1, 0.5, &service, &hops);
    setup.failures = &failures;
    setup.end_ns = 200_000;
    let plan = plan(1, 8);
    let mut sim = PoolSim::new(&setup, &plan);
    let factor = |sim: &PoolSim| match &sim.uppers[0].sched {
        Plane::HorusSpine(s) => s.busy_nodes().factor_of(0).unwrap(),
        _ => unreachable!(),
    };
    assert_eq!(factor(&sim), netsched_core::fixed::additive_factor(8));
    sim.schedule_start();
    sim.run_events(&|_| {});
    assert_eq!(factor(&sim), netsched_core::fixed::additive_factor(5));
}

/// Four racks of one 8-core server each under one spine: with Horus near
/// saturation, tasks are resubmitted at both layers.
fn four_racks() -> PoolPlan {
    PoolPlan {
        pool_id: 0,
        racks: (0..4)
            .map(|r| RackPlan {
                leaf: r,
                spine: 0,
                servers: vec![(r, 8)],
            })
            .collect(),
        spines: vec![0],
    }
}

/// Horus Fig. 15 counts the tasks a switch processes more than once, each
/// once per layer. Before the fix every task-carrying resubmission pass was
/// counted, so a task resubmitted twice at a leaf (a stale idle entry, then
/// the drift check) counted twice.
#[test]
fn resubmitted_tasks_counts_each_task_once_per_layer() {
    let service = ServiceDist::Exp { mean_us: 20.0 }.build().unwrap();
    let hops = |_: u32, _: u32| 1;
    let mut setup = setup(Policy::Horus, WorkerModel::Fcfs, 1, 0.95, &service, &hops);
    setup.end_ns = 20_000_000;
    setup.resubmit_ns = 500;
    let plan = four_racks();
    let mut sim = PoolSim::new(&setup, &plan);
    sim.schedule_start();
    let mut leaf_passes = std::collections::BTreeMap::<u64, u32>::new();
    while let Some((now, ev)) = sim.q.pop() {
        if let Ev::LowerResubmit { r, .. } = &ev {
            if let Some(t) = task_of(&Input::Resubmit(*r)) {
                *leaf_passes.entry(sim.tasks[t as usize].seq).or_default() += 1;
            }
        }
        sim.step(now, ev);
    }
    let twice = leaf_passes.values().filter(|&&n| n >= 2).count();
    assert!(twice > 0, "the run must resubmit some task twice at a leaf");
    assert_eq!(
        sim.metrics.resubmitted_tasks[1] as usize,
        leaf_passes.len(),
        "{twice} tasks were resubmitted more than once"
    );
}

/// Horus App. B's Fig. 15 is "the fraction of task packets that are
/// processed twice by a spine or leaf switch" (100 % if every packet were
/// resubmitted): a task repeated at both layers is one resubmitted task.
/// Before the fix the catalog summed the per-layer fractions, counting such
/// a task twice; this run has tasks repeated at both layers, so the sum
/// exceeds the number of distinct tasks the cross-layer count must give.
#[test]
fn resubmitted_tasks_any_counts_each_task_once_across_layers() {
    let service = ServiceDist::Exp { mean_us: 20.0 }.build().unwrap();
    let hops = |_: u32, _: u32| 1;
    let mut setup = setup(Policy::Horus, WorkerModel::Fcfs, 1, 0.95, &service, &hops);
    setup.resubmit_ns = 500;
    let plan = four_racks();
    let mut sim = PoolSim::new(&setup, &plan);
    sim.schedule_start();
    // Tasks (by sequence number) each layer processed more than once.
    let mut layers = [
        std::collections::BTreeSet::<u64>::new(),
        std::collections::BTreeSet::<u64>::new(),
    ];
    while let Some((now, ev)) = sim.q.pop() {
        let (layer, r) = match &ev {
            Ev::UpperResubmit { r, .. } => (0, r),
            Ev::LowerResubmit { r, .. } => (1, r),
            _ => {
                sim.step(now, ev);
                continue;
            }
        };
        if let Some(t) = task_of(&Input::Resubmit(*r)) {
            layers[layer].insert(sim.tasks[t as usize].seq);
        }
        sim.step(now, ev);
    }
    let both = layers[0].intersection(&layers[1]).count();
    assert!(both > 0, "the run must repeat some task at both layers");
    let any = layers[0].union(&layers[1]).count();
    assert_eq!(sim.metrics.resubmitted_tasks_any as usize, any);
    let summed: u64 = sim.metrics.resubmitted_tasks.iter().sum();
    assert_eq!(
        summed as usize,
        any + both,
        "the per-layer counts overlap by {both} tasks"
    );
}
