//! The paper's worked examples (Fig. 4a, 4b, 5) and a work-conservation case,
//! with completion times computed by hand (in the comments). Links are
//! 1 Gbps, so 125,000 bytes take exactly 1 ms alone.

use netsched_flowsim::config::TopologyConfig;
use netsched_flowsim::engine::{Engine, EngineOpts};
use netsched_flowsim::topology::Topology;
use netsched_flowsim::workload::{FlowSpec, TaskSpec, NO_GATE};
use netsched_flowsim::Policy;

const MS: u64 = 1_000_000;

/// One pod of two racks of four servers; ToR uplinks `tor_oversub`:1.
fn topo(tor_oversub: f64) -> Topology {
    Topology::new(&TopologyConfig {
        pods: 1,
        racks_per_pod: 2,
        servers_per_rack: 4,
        host_gbps: 1.0,
        tor_oversub,
        agg_oversub: 1.0,
    })
}

fn flow(src: u32, dst: u32, bytes: u64) -> FlowSpec {
    FlowSpec {
        src,
        dst,
        bytes,
        after: NO_GATE,
        feeds: NO_GATE,
        delay_ns: 0,
    }
}

fn task(arrival_ns: u64, task_id: u64, flows: Vec<FlowSpec>) -> TaskSpec {
    TaskSpec {
        arrival_ns,
        task_id,
        flows,
    }
}

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
    assert_eq!(got.len(), want.len(), "{what}");
    for (g, w) in got.iter().zip(want) {
        assert!(g.abs_diff(*w) <= 1, "{what}: got {got:?}, want {want:?}");
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

/// Work conservation over two hops: task 1's flows h0→h4 and h1→h5 cross
/// the ToR uplink (1 Gbps at 4:1), where each gets 0.5 Gbps; task 2's flow
/// h0→h1 (250 KB, lower priority for every task-aware policy and for SFF)
/// shares h0's uplink with h0→h4. h0's uplink must not idle: task 2 gets the
/// 0.5 Gbps task 1 cannot use, so by 2 ms (task 1 done) it has sent 125 KB
/// and finishes at 3 ms. Without work conservation it would end at 4 ms.
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
