//! End-to-end on loopback: client → spine → leaf → executor → leaf → spine
//! → client, Horus on both layers.

mod common;

use common::{cluster, decisions};
use netsched_config::workload::ServiceDist;
use netsched_node::cluster::{ClusterSpec, LocalCluster};
use netsched_node::config::{ClientConfig, Policy, Target};
use netsched_node::{Client, ClientReport};

fn client(target: std::net::SocketAddr, rate: f64, ms: u64, service: ServiceDist) -> ClientConfig {
    ClientConfig {
        targets: vec![Target {
            addr: target,
            weight: 1.0,
        }],
        pool: 3,
        app_id: 42,
        rate,
        duration_ms: ms,
        service,
        timeout_ms: 1000,
        seed: 9,
        bind: "127.0.0.1:0".into(),
        ..Default::default()
    }
}

/// The idle-list checks below rest on workers replying within a few hops of
/// the 200 µs service time. This shared VM stalls whole processes for ms (a
/// CI run: client send lag 4.5 ms, p99 9.8 ms, 88 % idle decisions); then
/// tasks arrive while both of a rack's workers are still off its idle list,
/// and the premise fails. Beyond these, a run is judged disturbed.
/// (A quiet run here: p99 0.65-1.9 ms, send lag 0.2-2.2 ms; a lag of a few
/// ms bunches a handful of tasks, which idle lists absorb.)
const UNDISTURBED_P99_US: f64 = 2_000.0;
const UNDISTURBED_SEND_LAG_US: f64 = 5_000.0;

/// Cargo runs this binary's tests in parallel; the busy cluster's 7,000
/// tasks/s would load the 2-core machine under the low-load run, so the
/// clusters here run one at a time.
fn one_cluster_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[test]
fn horus_low_load_every_task_completes_near_service_time() {
    let _alone = one_cluster_at_a_time();
    // An undisturbed run must have >= 90 % idle decisions; a disturbed one is
    // retried, and if every attempt is disturbed the last must still show
    // idle lists serving most tasks (broken ones serve none).
    let mut seen = Vec::new();
    for attempt in 1..=3 {
        let (r, idle_fraction) = horus_low_load_run();
        let disturbed = r.percentile_us(0.99) > UNDISTURBED_P99_US
            || r.max_send_lag_ns as f64 / 1e3 > UNDISTURBED_SEND_LAG_US;
        seen.push(format!("{idle_fraction:?} idle, {}", r.summary()));
        eprintln!(
            "attempt {attempt}, disturbed: {disturbed}: {}",
            seen[seen.len() - 1]
        );
        let (leaf, spine) = idle_fraction;
        if !disturbed {
            assert!(
                leaf >= 0.9,
                "leaf idle decisions in an undisturbed run: {seen:?}"
            );
            assert!(
                spine >= 0.9,
                "spine idle decisions in an undisturbed run: {seen:?}"
            );
            return;
        }
        if attempt == 3 {
            assert!(
                leaf >= 0.5 && spine >= 0.5,
                "idle lists served few tasks, every run disturbed: {seen:?}"
            );
        }
    }
}

/// One low-load run with every accounting invariant checked; returns the
/// client's report and the (leaf, spine) fractions of idle decisions.
fn horus_low_load_run() -> (ClientReport, (f64, f64)) {
    let c = cluster(3, 2, 2, Policy::Horus);
    // 4 workers, 1,000 tasks/s of 200 µs: load 0.05, so idle lists should
    // serve almost every task and the response time is the service time plus
    // a few loopback hops.
    let mut cl = Client::bind(client(
        c.spine,
        1000.0,
        1500,
        ServiceDist::Fixed { value_us: 200.0 },
    ))
    .unwrap();
    let r = cl.run();
    eprintln!("{}", r.summary());
    let spine = c.spine_metrics.clone();
    let leaves = c.leaf_metrics.clone();
    let workers = c.worker_metrics.clone();
    c.shutdown().unwrap();
    assert!(r.accounted(), "every task accounted for: {}", r.summary());
    assert!(r.submitted > 1000, "{}", r.summary());
    assert_eq!(r.completed, r.submitted, "{}", r.summary());
    assert_eq!(r.duplicate_replies + r.unknown_replies + r.late_replies, 0);
    let p50 = r.percentile_us(0.5);
    assert!(p50 >= 200.0, "p50 {p50} below the service time");
    assert!(p50 < 200.0 + 1500.0, "p50 {p50}: too much overhead");
    // Every task went through the spine and one of the leaves.
    let spine_tasks: u64 = ["idle", "sampled", "other"]
        .iter()
        .map(|d| decisions(&spine, d))
        .sum();
    assert_eq!(spine_tasks, r.submitted);
    let leaf_idle: u64 = leaves.iter().map(|l| decisions(l, "idle")).sum();
    let leaf_all: u64 = leaves
        .iter()
        .map(|l| {
            ["idle", "sampled", "other"]
                .iter()
                .map(|d| decisions(l, d))
                .sum::<u64>()
        })
        .sum();
    assert_eq!(leaf_all, r.submitted);
    // Both racks got work.
    for l in &leaves {
        assert!(l.sum("netsched_decisions_total") > 0);
    }
    let done: u64 = workers
        .iter()
        .map(|w| w.sum("netsched_worker_tasks_total"))
        .sum();
    assert_eq!(done, r.submitted);
    // Replies passed both layers on their way back.
    let fwd = |reg: &netsched_node::metrics::Registry| {
        reg.value("netsched_tx_packets_total", "{type=\"reply\"}")
            .unwrap()
    };
    assert_eq!(fwd(&spine), r.submitted);
    assert_eq!(leaves.iter().map(|l| fwd(l)).sum::<u64>(), r.submitted);
    // Heartbeats arrived and nothing was dropped by the runtime.
    assert!(leaves.iter().all(|l| l
        .value("netsched_rx_packets_total", "{type=\"keep_alive\"}")
        .unwrap()
        > 0));
    for reg in leaves.iter().chain(std::iter::once(&spine)) {
        assert_eq!(
            reg.value(
                "netsched_drops_total",
                "{by=\"runtime\",reason=\"unregistered_source\"}"
            ),
            Some(0)
        );
    }
    let fraction = |n: u64, of: u64| n as f64 / of as f64;
    let idle = (
        fraction(leaf_idle, leaf_all),
        fraction(decisions(&spine, "idle"), spine_tasks),
    );
    (r, idle)
}

#[test]
fn horus_busy_cluster_accounts_for_every_task() {
    let _alone = one_cluster_at_a_time();
    let c = cluster(3, 2, 2, Policy::Horus);
    // Load ≈ 0.7 on 4 executors with exponential service: queues form, the
    // spine and leaves fall back to power-of-2 and send load updates.
    let mut cl = Client::bind(client(
        c.spine,
        7000.0,
        1000,
        ServiceDist::Exp { mean_us: 400.0 },
    ))
    .unwrap();
    let r = cl.run();
    eprintln!("{}", r.summary());
    let spine = c.spine_metrics.clone();
    let leaves = c.leaf_metrics.clone();
    c.shutdown().unwrap();
    assert!(r.accounted(), "{}", r.summary());
    assert!(r.submitted > 5000);
    assert!(
        r.completed * 100 >= r.submitted * 95,
        "completed too few: {}",
        r.summary()
    );
    let sampled: u64 =
        decisions(&spine, "sampled") + leaves.iter().map(|l| decisions(l, "sampled")).sum::<u64>();
    assert!(sampled > 0, "power-of-2 never used under load");
    let notices = ["idle_add", "idle_remove", "load_update"]
        .iter()
        .map(|t| {
            spine
                .value("netsched_rx_packets_total", &format!("{{type=\"{t}\"}}"))
                .unwrap()
        })
        .sum::<u64>();
    assert!(notices > 0, "leaves never notified the spine");
}

#[test]
fn flat_random_baseline_runs_on_the_same_loop() {
    let _alone = one_cluster_at_a_time();
    let c = cluster(3, 2, 2, Policy::Random);
    let mut cl = Client::bind(client(
        c.spine,
        1000.0,
        500,
        ServiceDist::Fixed { value_us: 100.0 },
    ))
    .unwrap();
    let r = cl.run();
    c.shutdown().unwrap();
    assert!(r.accounted(), "{}", r.summary());
    assert_eq!(r.completed, r.submitted, "{}", r.summary());
    let j: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(j["submitted"], r.submitted, "{j}");
    assert_eq!(j["completed"], r.completed, "{j}");
    assert!(j["failed"].is_object(), "{j}");
    let p99 = j["p99_us"].as_f64().unwrap();
    assert!((p99 - r.percentile_us(0.99)).abs() < 1e-3, "{j}");
}

#[test]
fn rs_h_racksched_on_both_layers_runs_on_the_same_loop() {
    let _alone = one_cluster_at_a_time();
    // RS-H (Horus §4.1): RackSched at the spine over rack loads that the
    // leaves report after every reply, RackSched at the leaves. Soft state
    // off: its periodic re-reports (racksched_seal.rs, soft_state.rs) would
    // add to the one report per reply counted here.
    let c = LocalCluster::start(&ClusterSpec {
        pool: 3,
        racks: 2,
        executors: 2,
        spine_policy: Policy::RsH,
        leaf_policy: Policy::RsH,
        seed: 7,
        heartbeat_ms: 50,
        spin_us: 20,
        soft_state_ms: 0,
        ..ClusterSpec::default()
    })
    .expect("cluster starts");
    let mut cl = Client::bind(client(
        c.spine,
        2000.0,
        500,
        ServiceDist::Exp { mean_us: 200.0 },
    ))
    .unwrap();
    let r = cl.run();
    let spine = c.spine_metrics.clone();
    c.shutdown().unwrap();
    assert!(r.accounted(), "{}", r.summary());
    assert_eq!(r.completed, r.submitted, "{}", r.summary());
    // One load report per completed task reaches the spine.
    let reports = spine
        .value("netsched_rx_packets_total", "{type=\"load_update\"}")
        .unwrap();
    assert_eq!(reports, r.submitted);
    assert!(decisions(&spine, "sampled") > 0);
}
