//! The paper's worked examples (Fig. 4a, 4b, 5) and a work-conservation case,
//! with completion times computed by hand (in the comments). Links are
//! 1 Gbps, so 125,000 bytes take exactly 1 ms alone.

use netsched_flowsim::engine::{Engine, EngineOpts};
use netsched_flowsim::topology::Topology;
use netsched_flowsim::workload::TaskSpec;
use netsched_flowsim::Policy;

mod common;
use common::{flow, task, topo};

const MS: u64 = 1_000_000;

/// Completion times (ns) in arrival order.
fn run(topo: Topology, policy: Policy, threshold: f64, tasks: Vec<TaskSpec>) -> Vec<u64> {
    let mut e = Engine::new(
        topo,
        EngineOpts {
            policy,
            heavy_threshold: threshold,
        },
    );
    let mut r = e.run(tasks.into_iter());
    r.sort_by_key(|t| t.index);
    r.iter().map(|t| t.completion_ns).collect()
}

fn assert_close(got: &[u64], want: &[u64], what: &str) {
    assert_within(got, want, 1, what);
}

/// FIFO-LM's threshold crossings are events rounded up to the next ns (and a
/// task is heavy only once strictly over the threshold), so each crossing
/// in a chain can move later completion times by about a ns.
fn assert_within(got: &[u64], want: &[u64], tol_ns: u64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            g.abs_diff(*w) <= tol_ns,
            "{what}: got {got:?}, want {want:?} (within {tol_ns} ns)"
        );
    }
}

/// Fig. 4a: A and B (2 flows × 62.5 KB each, into aggregator h0) arrive at 0.
/// Fair sharing: both at 2 ms. Task serialization: A at 1 ms, B at 2 ms.
#[test]
fn fig4a_single_stage() {
    let tasks = || {
        vec![
            task(0, 1, vec![flow(1, 0, 62_500), flow(2, 0, 62_500)]),
            task(0, 2, vec![flow(1, 0, 62_500), flow(2, 0, 62_500)]),
        ]
    };
    let inf = f64::INFINITY;
    // pFabric: all four flows are the same size, so it is fair sharing.
    for p in [Policy::Fair, Policy::Pfabric] {
        assert_close(
            &run(topo(1.0), p, inf, tasks()),
            &[2 * MS, 2 * MS],
            p.name(),
        );
    }
    // STF: a tie in size, broken by arrival.
    for p in [Policy::Orchestra, Policy::Stf, Policy::Baraat] {
        assert_close(&run(topo(1.0), p, inf, tasks()), &[MS, 2 * MS], p.name());
    }
}

/// Fig. 4b: two stages with different bottlenecks. Stage 1: workers h1, h2
/// send 62.5 KB each to mid aggregator h0 (bottleneck h0's downlink);
/// stage 2: h0 sends 125 KB to top aggregator h4 in the other rack
/// (bottleneck h0's uplink). FS: stage 1 ends at 2 ms for both, stage 2 at
/// 4 ms for both. TS: A's stage 1 ends at 1 ms and its stage 2 at 2 ms while
/// B's stage 1 runs 1-2 ms and its stage 2 2-3 ms: A = 2 ms, B = 3 ms.
#[test]
fn fig4b_two_stage_pipelining() {
    let two_stage = |id| {
        let mut w1 = flow(1, 0, 62_500);
        let mut w2 = flow(2, 0, 62_500);
        w1.feeds = 0;
        w2.feeds = 0;
        let mut up = flow(0, 4, 125_000);
        up.after = 0;
        task(0, id, vec![w1, w2, up])
    };
    let tasks = || vec![two_stage(1), two_stage(2)];
    let inf = f64::INFINITY;
    for p in [Policy::Fair, Policy::Pfabric] {
        assert_close(
            &run(topo(1.0), p, inf, tasks()),
            &[4 * MS, 4 * MS],
            p.name(),
        );
    }
    for p in [Policy::Orchestra, Policy::Stf, Policy::Baraat] {
        assert_close(
            &run(topo(1.0), p, inf, tasks()),
            &[2 * MS, 3 * MS],
            p.name(),
        );
    }
}

/// Fig. 5: A and B at 0, C at 4 ms; each task is 2 flows × 250 KB into h0
/// (4 ms alone).
#[test]
fn fig5_online_fifo() {
    let t = |arr, id| task(arr, id, vec![flow(1, 0, 250_000), flow(2, 0, 250_000)]);
    let tasks = || vec![t(0, 1), t(0, 2), t(4 * MS, 3)];
    let inf = f64::INFINITY;
    // FS: A and B share until 4 ms (250 KB left each), then all three share:
    // A and B need 6 ms at 1/3 Gbps (done at 10 ms); C has 250 KB left then,
    // done at 12 ms: 10, 10, 8.
    assert_close(
        &run(topo(1.0), Policy::Fair, inf, tasks()),
        &[10 * MS, 10 * MS, 8 * MS],
        "fair",
    );
    // pFabric: at 4 ms A's and B's flows have 125 KB left, less than C's
    // 250 KB: A and B finish first, at 8 ms; C runs 8-12 ms: 8, 8, 8.
    assert_close(
        &run(topo(1.0), Policy::Pfabric, inf, tasks()),
        &[8 * MS, 8 * MS, 8 * MS],
        "pfabric",
    );
    // FIFO: A 0-4, B 4-8, C 8-12: 4, 8, 8 ("none more than 8").
    for p in [Policy::Orchestra, Policy::Stf, Policy::Baraat] {
        assert_close(
            &run(topo(1.0), p, inf, tasks()),
            &[4 * MS, 8 * MS, 8 * MS],
            p.name(),
        );
    }
    // Baraat with a 100 KB heavy threshold (FIFO-LM): A alone until it has
    // sent 100 KB (0.8 ms), then A and B share (0.5 Gbps each); B is heavy at
    // 2.4 ms; at 4 ms A has 200 KB left, B 300 KB, and C joins the class:
    // 1/3 Gbps each, A done at 8.8 ms; B (100 KB left) and C (300 KB left)
    // share: B done at 10.4 ms, C then has 200 KB left, done at 12 ms.
    assert_close(
        &run(topo(1.0), Policy::Baraat, 100_000.0, tasks()),
        &[8_800_000, 10_400_000, 8 * MS],
        "baraat fifo-lm",
    );
}

/// STF is non-preemptive (§5.2.1's centralised scheduler orders the tasks
/// it starts by size; it does not stop one it started): A (2 × 250 KB, 4 ms)
/// starts alone at 0; B (2 × 125 KB, 2 ms) and C (2 × 62.5 KB, 1 ms) arrive
/// at 1 ms and wait for A, then go smallest first: A 0-4, C 4-5, B 5-7 ms,
/// so completion times 4, 6 and 4 ms. Preempting A for every smaller
/// arrival (shortest remaining task first) would give C 1-2, B 2-4, A 4-7:
/// 7, 3 and 1. pFabric, shortest remaining *flow* first, does preempt.
#[test]
fn stf_does_not_preempt_a_started_task() {
    let t = |arr, id, kb| task(arr, id, vec![flow(1, 0, kb), flow(2, 0, kb)]);
    let tasks = || vec![t(0, 1, 250_000), t(MS, 2, 125_000), t(MS, 3, 62_500)];
    assert_close(
        &run(topo(1.0), Policy::Stf, f64::INFINITY, tasks()),
        &[4 * MS, 6 * MS, 4 * MS],
        "stf",
    );
    // pFabric: at 1 ms A's flows have 187.5 KB left: C (62.5 KB flows) runs
    // 1-2 ms, B (125 KB) 2-4 ms, A 4-7 ms.
    assert_close(
        &run(topo(1.0), Policy::Pfabric, f64::INFINITY, tasks()),
        &[7 * MS, 3 * MS, MS],
        "pfabric",
    );
}

/// Work conservation over two hops: task 1's flows h0→h4 and h1→h5 cross
/// the ToR uplink (1 Gbps at 4:1), where each gets 0.5 Gbps; task 2's flow
/// h0→h1 (250 KB, lower priority for every task-aware policy and for SFF)
/// shares h0's uplink with h0→h4. h0's uplink must not idle: task 2 gets the
/// 0.5 Gbps task 1 cannot use, so by 2 ms (task 1 done) it has sent 125 KB
/// and finishes at 3 ms. Without work conservation it would end at 4 ms.
/// pFabric's order moves between events. Rack uplinks carry 750 Mbps.
/// At the start, h0's downlink serves `a` (h4->h0, 100 KB, across the
/// uplink: 750 Mbps) ahead of `b` (h1->h0, 140 KB), which gets the 250 left;
/// h1's uplink serves `b` ahead of `c` (h1->h2, 150 KB), which gets 750.
/// `c` drains 500 Mbps faster than `b` and meets it at 10 KB / 500 Mbps =
/// 160 µs (135 KB left each), nothing starting or ending then: `c` goes
/// ahead at h1's uplink and takes 1 Gbps (done at 160 + 1080 = 1240 µs),
/// `b` waits at 0 until then and finishes at 1240 + 1080 = 2320 µs; `a`
/// finishes at 100 KB / 750 Mbps = 1066.7 µs. Re-keying only at the next
/// event (`a`'s end) would keep `c` at 750 Mbps until 1066.7 µs and end it
/// at 1466.7 µs.
#[test]
fn pfabric_swaps_order_when_remaining_sizes_meet() {
    let tasks = vec![
        task(0, 1, vec![flow(4, 0, 100_000)]),
        task(0, 2, vec![flow(1, 0, 140_000)]),
        task(0, 3, vec![flow(1, 2, 150_000)]),
    ];
    let got = run(topo(16.0 / 3.0), Policy::Pfabric, 0.0, tasks);
    assert_within(
        &got,
        &[1_066_667, 2_320_000, 1_240_000],
        2,
        "pFabric order swap",
    );
}

#[test]
fn work_conservation_two_hops() {
    let tasks = || {
        vec![
            task(0, 1, vec![flow(0, 4, 125_000), flow(1, 5, 125_000)]),
            task(0, 2, vec![flow(0, 1, 250_000)]),
        ]
    };
    for p in Policy::ALL {
        assert_close(
            &run(topo(4.0), p, f64::INFINITY, tasks()),
            &[2 * MS, 3 * MS],
            p.name(),
        );
    }
}

/// Tasks that share nothing do not affect each other, whatever the policy.
#[test]
fn independent_racks() {
    let tasks = || {
        vec![
            task(0, 1, vec![flow(1, 0, 125_000)]),
            task(0, 2, vec![flow(5, 4, 125_000)]),
        ]
    };
    for p in Policy::ALL {
        assert_close(
            &run(topo(2.0), p, f64::INFINITY, tasks()),
            &[MS, MS],
            p.name(),
        );
    }
}

/// The shipped experiment configs parse, and a small whole run is
/// deterministic and completes every task under every policy.
#[test]
fn configs_parse_and_small_runs_are_deterministic() {
    use netsched_flowsim::config::Workflow;
    use netsched_flowsim::run::run_config;
    use netsched_flowsim::FlowConfig;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../experiments/");
    for f in ["baraat.toml", "baraat-fig12.toml", "baraat-two-stage.toml"] {
        let text = std::fs::read_to_string(format!("{dir}{f}")).unwrap();
        FlowConfig::from_toml(&text).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    for wf in [Workflow::SingleStage, Workflow::TwoStage, Workflow::Storage] {
        let mut cfg = FlowConfig::default();
        cfg.topology.pods = 2;
        cfg.topology.racks_per_pod = 3;
        cfg.topology.servers_per_rack = 6;
        cfg.workload.workflow = wf;
        cfg.workload.tasks = 60;
        cfg.workload.aggregators = 2;
        cfg.workload.mid_aggregators = 2;
        cfg.workload.compute_us = 50.0;
        cfg.baraat.entry_points = 2;
        cfg.sweep.thresholds = vec![0.5];
        let a = run_config(&cfg, |_| {}).unwrap();
        let b = run_config(&cfg, |_| {}).unwrap();
        assert_eq!(a.len(), 6);
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.tasks.len(), 60, "{wf:?} {}", x.label());
            assert_eq!(x.tasks, y.tasks, "{wf:?} {}", x.label());
            assert!(x.tasks.iter().all(|t| t.completion_ns > 0));
        }
    }
}

/// §4.1: with two entry points (load balancers) the ids come from two
/// counters, 1, 3, 5, ... and 2, 4, 6, ..., so ids approximate arrival order
/// only. A (entry 0, t = 0) gets id 1, B (entry 0, t = 0.5 ms) id 3, and C
/// (entry 1, t = 1 ms) id 2: C arrived last but is ahead of B. Every task is
/// 2 flows × 125 KB into h0 (2 ms alone).
#[test]
fn entry_points_interleave_ids_and_reorder_fifo_lm() {
    use netsched_flowsim::spc::TaskIdCounter;
    // (entry point, arrival) of A, B, C.
    let arrivals = [(0usize, 0u64), (0, 500_000), (1, MS)];
    let tasks = |entry_points: u64| {
        let mut counters: Vec<TaskIdCounter> = (0..entry_points)
            .map(|i| TaskIdCounter::new(i, entry_points))
            .collect();
        arrivals
            .iter()
            .map(|&(entry, t)| {
                // With one counter every task comes through it.
                let id = counters[entry % entry_points as usize].next_id();
                task(t, id, vec![flow(1, 0, 125_000), flow(2, 0, 125_000)])
            })
            .collect::<Vec<_>>()
    };
    let ids = |v: &[TaskSpec]| v.iter().map(|t| t.task_id).collect::<Vec<_>>();
    assert_eq!(ids(&tasks(2)), [1, 3, 2]);
    assert_eq!(ids(&tasks(1)), [1, 2, 3]);
    let inf = f64::INFINITY;
    // FIFO by arrival (Orchestra, or Baraat with one counter): A 0-2 ms,
    // B 2-4 ms, C 4-6 ms: completion 2, 3.5, 5 ms.
    let by_arrival = [2 * MS, 3_500_000, 5 * MS];
    assert_close(
        &run(topo(1.0), Policy::Orchestra, inf, tasks(2)),
        &by_arrival,
        "orchestra",
    );
    assert_close(
        &run(topo(1.0), Policy::Baraat, inf, tasks(1)),
        &by_arrival,
        "baraat, one counter",
    );
    // Baraat by id with two counters: A 0-2 ms, C 2-4 ms, B 4-6 ms:
    // completion 2, 5.5, 3 ms.
    assert_close(
        &run(topo(1.0), Policy::Baraat, inf, tasks(2)),
        &[2 * MS, 5_500_000, 3 * MS],
        "baraat, two counters",
    );
    // FIFO-LM with a 100 KB heavy threshold (§3.3, 1 Gbps = 125 KB/ms).
    // One counter (ids 1, 2, 3): A alone until heavy at 0.8 ms, then A and
    // B share (0.5 Gbps per task); C (id 3) arrives at 1 ms behind them. B
    // has sent 100 KB at 2.4 ms and turns heavy: A, B, C in one class, 1/6
    // Gbps per flow. A's flows (25 KB left each) end at 3.6 ms; B (50 KB
    // per flow) and C (100 KB) share 0.25 Gbps per flow: B ends at 5.2 ms,
    // C (50 KB) at 0.5 Gbps per flow at 6 ms. Completion 3.6, 4.7, 5 ms.
    assert_within(
        &run(topo(1.0), Policy::Baraat, 100_000.0, tasks(1)),
        &[3_600_000, 4_700_000, 5 * MS],
        3,
        "fifo-lm, one counter",
    );
    // Two counters (A 1, B 3, C 2): A heavy at 0.8 ms shares its class
    // with the next id, B, until C (id 2) arrives at 1 ms and takes B's
    // place: B (12.5 KB sent) drops to 0. A (137.5 KB left) and C share
    // 0.5 Gbps per task; C turns heavy at 2.6 ms, bringing B back: 1/6 Gbps
    // per flow with A at 18.75 KB per flow, C at 75 KB and B at 118.75 KB.
    // A ends at 3.5 ms; C (56.25 KB per flow) and B (100 KB) share 0.25
    // Gbps per flow: C ends at 5.3 ms, B (43.75 KB) at 0.5 Gbps per flow
    // at 6 ms. Completion 3.5, 5.5, 4.3 ms.
    assert_within(
        &run(topo(1.0), Policy::Baraat, 100_000.0, tasks(2)),
        &[3_500_000, 5_500_000, 4_300_000],
        3,
        "fifo-lm, two counters",
    );
}

/// The config's `baraat.entry_points` reaches the engine: every task gets
/// the next id of the counter of the entry point it arrived through.
#[test]
fn config_entry_points_feed_the_counters() {
    use netsched_flowsim::run::task_source;
    use netsched_flowsim::workload::Generator;
    use netsched_flowsim::FlowConfig;
    let mut cfg = FlowConfig::default();
    cfg.topology.pods = 2;
    cfg.topology.racks_per_pod = 2;
    cfg.topology.servers_per_rack = 4;
    cfg.workload.tasks = 200;
    cfg.workload.aggregators = 2;
    cfg.baraat.entry_points = 3;
    let gen = Generator::new(&cfg);
    let arrivals = gen.arrivals();
    let ids: Vec<u64> = task_source(&gen, &cfg).map(|t| t.task_id).collect();
    let mut next = [1u64, 2, 3];
    for (&(_, entry), &id) in arrivals.iter().zip(&ids) {
        assert_eq!(id, next[entry as usize]);
        next[entry as usize] += 3;
    }
    // Interleaved, so not in arrival order: some later task has a lower id.
    assert!(ids.windows(2).any(|w| w[1] < w[0]), "{ids:?}");
}

/// Storage retrieval (§5.1) in a data-parallel batch (Fig. 11): three reads
/// at t = 0 by client h0, each a chunk from three servers (some in the
/// other rack, one shared by two tasks); the client's downlink is the only
/// bottleneck. T1 reads 3 × 125 KB (3 ms alone), T2 3 × 62.5 KB (1.5 ms),
/// T3 3 × 25 KB (0.6 ms).
#[test]
fn batched_storage_reads() {
    let tasks = || {
        vec![
            task(
                0,
                1,
                vec![
                    flow(1, 0, 125_000),
                    flow(2, 0, 125_000),
                    flow(4, 0, 125_000),
                ],
            ),
            task(
                0,
                2,
                vec![flow(2, 0, 62_500), flow(5, 0, 62_500), flow(6, 0, 62_500)],
            ),
            task(
                0,
                3,
                vec![flow(3, 0, 25_000), flow(5, 0, 25_000), flow(7, 0, 25_000)],
            ),
        ]
    };
    let inf = f64::INFINITY;
    // FIFO (Orchestra; Baraat below its threshold): 3, 4.5, 5.1 ms.
    for p in [Policy::Orchestra, Policy::Baraat] {
        assert_close(
            &run(topo(1.0), p, inf, tasks()),
            &[3 * MS, 4_500_000, 5_100_000],
            p.name(),
        );
    }
    // Fair sharing: nine flows at 1/9 Gbps; T3's (25 KB) end at 1.8 ms,
    // then T2's (37.5 KB left) at 1/6 Gbps at 3.6 ms, then T1's (62.5 KB
    // left) at 1/3 Gbps at 5.1 ms.
    assert_close(
        &run(topo(1.0), Policy::Fair, inf, tasks()),
        &[5_100_000, 3_600_000, 1_800_000],
        "fair",
    );
    // Shortest task first, and pFabric (each task's flows are the same
    // size, and the smaller task has the smaller flows): T3 0-0.6 ms, T2
    // 0.6-2.1 ms, T1 2.1-5.1 ms.
    for p in [Policy::Stf, Policy::Pfabric] {
        assert_close(
            &run(topo(1.0), p, inf, tasks()),
            &[5_100_000, 2_100_000, 600_000],
            p.name(),
        );
    }
    // FIFO-LM, 100 KB threshold: T1 heavy at 0.8 ms, shares with T2 (1/6
    // Gbps per flow); T2 heavy at 2.4 ms (T1 at 58.33 KB per flow, T2 at
    // 29.17 KB), all nine flows share: T3 ends at 4.2 ms; T1 and T2 at 1/6
    // Gbps: T2 (4.17 KB left) at 4.4 ms; T1 (29.17 KB) at 1/3 Gbps at 5.1 ms.
    assert_within(
        &run(topo(1.0), Policy::Baraat, 100_000.0, tasks()),
        &[5_100_000, 4_400_000, 4_200_000],
        3,
        "fifo-lm",
    );
}

/// The storage workflow and batch arrivals through the config and the
/// workload generator: one client host, three reads of 3 × 125 KB at t = 0
/// (flow sizes fixed by flow_min_kb = flow_max_kb). Task serialization
/// finishes them at 3, 6 and 9 ms; fair sharing (and pFabric: every flow
/// the same size) all at 9 ms.
#[test]
fn batched_storage_from_config() {
    use netsched_flowsim::config::{Arrival, SizeModel, Workflow};
    use netsched_flowsim::run::run_config;
    use netsched_flowsim::FlowConfig;
    let mut cfg = FlowConfig::default();
    cfg.topology.pods = 1;
    cfg.topology.racks_per_pod = 2;
    cfg.topology.servers_per_rack = 4;
    cfg.workload.workflow = Workflow::Storage;
    cfg.workload.arrival = Arrival::Batch;
    cfg.workload.sizes = SizeModel::Uniform;
    cfg.workload.flow_min_kb = 125.0;
    cfg.workload.flow_max_kb = 125.0;
    cfg.workload.tasks = 3;
    cfg.workload.aggregators = 1;
    cfg.workload.storage_servers = 3;
    let runs = run_config(&cfg, |_| {}).unwrap();
    assert_eq!(runs.len(), Policy::ALL.len());
    for r in &runs {
        assert!(r
            .tasks
            .iter()
            .all(|t| t.arrival_ns == 0 && t.bytes == 375_000));
        let got: Vec<u64> = r.tasks.iter().map(|t| t.completion_ns).collect();
        let want = match r.policy {
            Policy::Fair | Policy::Pfabric => [9 * MS; 3],
            // Baraat: the p80 threshold of a history where every task sends
            // 375 KB into its client is 375 KB, which no task exceeds.
            Policy::Orchestra | Policy::Stf | Policy::Baraat => [3 * MS, 6 * MS, 9 * MS],
        };
        assert_close(&got, &want, r.policy.name());
    }
}
