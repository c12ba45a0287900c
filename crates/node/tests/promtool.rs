//! Every daemon's /metrics passes `promtool check metrics`: spine and leaf
//! switch daemons, worker agents, the client, the controller, the pull
//! scheduler and its executors, each after traffic so that histograms and
//! labelled series are populated, served by the endpoint the daemons use.
//! The same scrapes check the Grafana dashboard (docs/grafana/netsched.json):
//! every metric its panels query is one the daemons export.
//!
//! promtool comes with Debian's `prometheus` package (scripts/install-deps.sh).
//! Without it the test says so and passes, unless NETSCHED_REQUIRE_PROMTOOL=1
//! (scripts/test.sh sets it), where a missing promtool fails the test.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::cluster;
use netsched_config::pull::PullPolicy;
use netsched_config::workload::ServiceDist;
use netsched_node::config::{ClientConfig, Policy, Target};
use netsched_node::controller::{Controller, ControllerConfig};
use netsched_node::metrics::{self, Registry};
use netsched_node::pull::{
    PullClient, PullClientConfig, PullDaemon, PullSwitchConfig, PullWorker, PullWorkerConfig,
};
use netsched_node::Client;

fn promtool_available() -> bool {
    let found = Command::new("promtool")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        let required = std::env::var("NETSCHED_REQUIRE_PROMTOOL").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "NETSCHED_REQUIRE_PROMTOOL=1 but promtool is not installed (apt-get install prometheus)"
        );
        eprintln!("promtool not installed: /metrics not checked (apt-get install prometheus)");
    }
    found
}

/// GET /metrics from `registry` served as a daemon serves it.
fn scrape(registry: Arc<Registry>) -> String {
    let stop = Arc::new(AtomicBool::new(false));
    let (addr, h) = metrics::serve("127.0.0.1:0", registry, stop.clone()).unwrap();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_string()
}

/// Series every daemon serves: its build and the standard process series.
const EVERY_DAEMON: [&str; 6] = [
    "netsched_build_info{",
    "\nprocess_cpu_seconds_total ",
    "\nprocess_resident_memory_bytes ",
    "\nprocess_virtual_memory_bytes ",
    "\nprocess_open_fds ",
    "\nprocess_start_time_seconds ",
];

fn check_body(daemon: &str, body: &str, must_have: &[&str]) {
    for name in EVERY_DAEMON.iter().chain(must_have) {
        assert!(body.contains(name), "{daemon}: no {name} in\n{body}");
    }
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics on the {daemon}'s /metrics: {}{}\n{body}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn port() -> SocketAddr {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// A Horus cluster under a client: the (daemon, /metrics body) of its
/// spine, a leaf, a worker agent and the client.
fn push_scrapes() -> Vec<(&'static str, String)> {
    let c = cluster(3, 2, 2, Policy::Horus);
    let mut client = Client::bind(ClientConfig {
        targets: vec![Target {
            addr: c.spine,
            weight: 1.0,
        }],
        pool: 3,
        rate: 2000.0,
        duration_ms: 300,
        service: ServiceDist::Fixed { value_us: 50.0 },
        timeout_ms: 1000,
        bind: "127.0.0.1:0".into(),
        ..Default::default()
    })
    .unwrap();
    let client_reg = client.registry();
    let r = client.run();
    assert!(r.completed > 0, "{}", r.summary());
    let out = vec![
        ("spine", scrape(c.spine_metrics.clone())),
        ("leaf", scrape(c.leaf_metrics[0].clone())),
        ("worker", scrape(c.worker_metrics[0].clone())),
        ("client", scrape(client_reg)),
    ];
    c.shutdown().unwrap();
    // The client's live counts are its report's.
    let client = &out[3].1;
    for (name, n) in [
        ("netsched_client_tasks_submitted_total", r.submitted),
        ("netsched_client_tasks_completed_total", r.completed),
        ("netsched_client_latency_seconds_count", r.completed),
    ] {
        assert!(
            client.contains(&format!("\n{name} {n}\n")),
            "{name} {n}:\n{client}"
        );
    }
    out
}

#[test]
fn switch_worker_and_client_metrics_pass_promtool() {
    if !promtool_available() {
        return;
    }
    let scrapes = push_scrapes();
    let body = |d: &str| &scrapes.iter().find(|(n, _)| *n == d).unwrap().1;
    let common = ["netsched_build_info{", "netsched_rx_packets_total{"];
    let switch = [
        "netsched_dispatch_decision_seconds_bucket{",
        "netsched_pipeline_passes_total{",
    ];
    check_body("spine", body("spine"), &[&common[..], &switch[..]].concat());
    check_body(
        "leaf",
        body("leaf"),
        &[&common[..], &switch[..], &["netsched_rack_load{"]].concat(),
    );
    check_body(
        "client",
        body("client"),
        &[
            "netsched_client_latency_seconds_bucket{",
            "netsched_client_tasks_failed_total{reason=\"reply\"}",
        ],
    );
    check_body(
        "worker",
        body("worker"),
        &[
            "netsched_build_info{",
            "netsched_worker_busy_seconds_total{",
            "netsched_worker_run_seconds_bucket{",
        ],
    );
}

/// A Draconis scheduler, its executors and a client: the scheduler's and
/// the executors' /metrics.
fn pull_scrapes() -> Vec<(&'static str, String)> {
    let policy = PullPolicy::Draconis;
    let socks: Vec<UdpSocket> = (0..2)
        .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
        .collect();
    let addrs = socks.iter().map(|s| s.local_addr().unwrap()).collect();
    let scfg = PullSwitchConfig::new("127.0.0.1:0", policy, addrs);
    let mut d = PullDaemon::bind(&scfg).unwrap();
    let (sched_reg, sched_addr) = (d.registry(), d.local_addr());
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let daemon = std::thread::spawn(move || d.run(&st).unwrap());
    let mut wcfg = PullWorkerConfig::new(sched_addr, policy, vec![]);
    wcfg.listen = vec!["unused".into(); 2];
    let worker_stop = Arc::new(AtomicBool::new(false));
    let workers = PullWorker::start(&wcfg, socks, worker_stop.clone()).unwrap();
    let mut ccfg = PullClientConfig::new(
        sched_addr,
        2000.0,
        300,
        ServiceDist::Fixed { value_us: 50.0 },
    );
    ccfg.timeout_ms = 200;
    let r = PullClient::bind(ccfg).unwrap().run();
    assert!(r.completed > 0, "{}", r.summary());
    let exec_reg = workers.registry();
    worker_stop.store(true, Ordering::Relaxed);
    workers.join();
    stop.store(true, Ordering::Relaxed);
    daemon.join().unwrap();
    vec![
        ("pull scheduler", scrape(sched_reg)),
        ("executor", scrape(exec_reg)),
    ]
}

#[test]
fn pull_scheduler_and_executor_metrics_pass_promtool() {
    if !promtool_available() {
        return;
    }
    let scrapes = pull_scrapes();
    check_body(
        "pull scheduler",
        &scrapes[0].1,
        &[
            "netsched_dispatch_decision_seconds_bucket{",
            "netsched_pipeline_passes_total{pass=\"first\"}",
        ],
    );
    check_body(
        "executor",
        &scrapes[1].1,
        &[
            "netsched_worker_busy_seconds_total{",
            "netsched_worker_run_seconds_bucket{",
        ],
    );
}

/// A controller after one admin request: its /metrics.
fn controller_scrape() -> String {
    // Bound to port 0 and read back: no window for another socket to take it.
    let (spine, leaf, w) = (port(), port(), port());
    let cfg = ControllerConfig::from_toml(&format!(
        "listen = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\ntoken = \"promtool-test-token\"\n\
         key = \"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\"\n\
         [[pool]]\nid = 1\nspines = [\"{spine}\"]\n\
         [[pool.rack]]\nleaf = \"{leaf}\"\nworkers = [\"{w}\"]\n"
    ))
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let c = Controller::start(&cfg, stop.clone()).unwrap();
    let admin = c.admin_addr;
    // One admin request, so the latency histogram has an observation.
    let (code, _) = netsched_node::controller::http(admin, "GET", "/healthz", None, None).unwrap();
    assert_eq!(code, 200);
    let reg = c.registry();
    stop.store(true, Ordering::Relaxed);
    c.join();
    scrape(reg)
}

#[test]
fn controller_metrics_pass_promtool() {
    if !promtool_available() {
        return;
    }
    check_body(
        "controller",
        &controller_scrape(),
        &[
            "netsched_controller_admin_request_seconds_count 1",
            "netsched_live_nodes{",
        ],
    );
}

/// Metric names in a PromQL expression: identifiers of the netsched and
/// process families (label names, functions and `$__rate_interval` are
/// not among them).
fn metric_names(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(i) = rest.find(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$') {
        let tail = &rest[i..];
        let n = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
            .unwrap_or(tail.len());
        let word = &tail[..n];
        if word.starts_with("netsched_") || word.starts_with("process_") {
            out.push(word.to_string());
        }
        rest = &tail[n..];
    }
    out
}

/// The Grafana dashboard is valid JSON of Grafana's dashboard model
/// (title, uid, schemaVersion, panels with ids, grid positions and
/// Prometheus targets), it has the panels a researcher needs (client
/// latency from the histogram, decisions by kind, queue lengths, drops by
/// reason, failures), and every metric its queries name is one a daemon
/// exports, read from the daemons' own /metrics after traffic.
#[test]
fn grafana_dashboard_queries_only_exported_metrics() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/grafana/netsched.json"
    );
    let d: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .expect("the dashboard is JSON");
    assert!(d["title"].is_string() && d["uid"].is_string());
    assert!(d["schemaVersion"].as_u64().is_some_and(|v| v >= 30));
    let panels = d["panels"].as_array().expect("panels");
    let mut ids = std::collections::BTreeSet::new();
    let mut exprs = Vec::new();
    for p in panels {
        let title = p["title"].as_str().expect("a panel title");
        assert!(
            ids.insert(p["id"].as_u64().expect("a panel id")),
            "{title}: id"
        );
        for k in ["x", "y", "w", "h"] {
            assert!(p["gridPos"][k].as_u64().is_some(), "{title}: gridPos.{k}");
        }
        assert_eq!(p["datasource"]["type"], "prometheus", "{title}");
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{title}");
        for t in targets {
            assert!(t["refId"].is_string(), "{title}: refId");
            exprs.push((
                title.to_string(),
                t["expr"].as_str().expect("expr").to_string(),
            ));
        }
    }
    let all = exprs
        .iter()
        .map(|e| e.1.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    for needed in [
        "histogram_quantile(0.99, sum by (le) (rate(netsched_client_latency_seconds_bucket",
        "sum by (instance, decision) (rate(netsched_decisions_total",
        "netsched_worker_queue_length",
        "netsched_pull_queue_length",
        "sum by (reason) (rate(netsched_drops_total",
        "netsched_node_failures_total",
        "netsched_client_tasks_failed_total",
    ] {
        assert!(all.contains(needed), "no panel queries {needed}");
    }
    // What the daemons export: every sample name in their scrapes.
    let mut bodies: Vec<String> = push_scrapes().into_iter().map(|s| s.1).collect();
    bodies.extend(pull_scrapes().into_iter().map(|s| s.1));
    bodies.push(controller_scrape());
    let exported: std::collections::BTreeSet<String> = bodies
        .iter()
        .flat_map(|b| b.lines())
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(['{', ' ']).next().unwrap().to_string())
        .collect();
    let mut unknown = Vec::new();
    for (title, e) in &exprs {
        let names = metric_names(e);
        assert!(!names.is_empty(), "{title}: no metric in {e}");
        for n in names {
            if !exported.contains(&n) {
                unknown.push(format!("{title}: {n}"));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "not exported by any daemon: {unknown:#?}"
    );
}
