//! Every daemon's /metrics passes `promtool check metrics` (issue 20 item 1):
//! spine and leaf switch daemons, worker agents, the controller, the pull
//! scheduler and its executors, each after traffic so that histograms and
//! labelled series are populated, served by the endpoint the daemons use.
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

fn check(daemon: &str, registry: Arc<Registry>, must_have: &[&str]) {
    let body = scrape(registry);
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

#[test]
fn switch_and_worker_metrics_pass_promtool() {
    if !promtool_available() {
        return;
    }
    let c = cluster(3, 2, 2, Policy::Horus);
    let r = Client::bind(ClientConfig {
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
    .unwrap()
    .run();
    assert!(r.completed > 0, "{}", r.summary());
    let spine = c.spine_metrics.clone();
    let leaf = c.leaf_metrics[0].clone();
    let worker = c.worker_metrics[0].clone();
    c.shutdown().unwrap();
    let common = ["netsched_build_info{", "netsched_rx_packets_total{"];
    let switch = [
        "netsched_dispatch_decision_seconds_bucket{",
        "netsched_pipeline_passes_total{",
    ];
    check("spine", spine, &[&common[..], &switch[..]].concat());
    check(
        "leaf",
        leaf,
        &[&common[..], &switch[..], &["netsched_rack_load{"]].concat(),
    );
    check(
        "worker",
        worker,
        &[
            "netsched_build_info{",
            "netsched_worker_busy_seconds_total{",
            "netsched_worker_run_seconds_bucket{",
        ],
    );
}

#[test]
fn pull_scheduler_and_executor_metrics_pass_promtool() {
    if !promtool_available() {
        return;
    }
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
    check(
        "pull scheduler",
        sched_reg,
        &[
            "netsched_dispatch_decision_seconds_bucket{",
            "netsched_pipeline_passes_total{pass=\"first\"}",
        ],
    );
    check(
        "executor",
        exec_reg,
        &[
            "netsched_worker_busy_seconds_total{",
            "netsched_worker_run_seconds_bucket{",
        ],
    );
}

#[test]
fn controller_metrics_pass_promtool() {
    if !promtool_available() {
        return;
    }
    let (ctl, admin, spine, leaf, w) = (port(), port(), port(), port(), port());
    let cfg = ControllerConfig::from_toml(&format!(
        "listen = \"{ctl}\"\nadmin = \"{admin}\"\ntoken = \"promtool-test-token\"\n\
         key = \"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\"\n\
         [[pool]]\nid = 1\nspines = [\"{spine}\"]\n\
         [[pool.rack]]\nleaf = \"{leaf}\"\nworkers = [\"{w}\"]\n"
    ))
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let c = Controller::start(&cfg, stop.clone()).unwrap();
    // One admin request, so the latency histogram has an observation.
    let (code, _) = netsched_node::controller::http(admin, "GET", "/healthz", None, None).unwrap();
    assert_eq!(code, 200);
    let reg = c.registry();
    stop.store(true, Ordering::Relaxed);
    c.join();
    check(
        "controller",
        reg,
        &[
            "netsched_controller_admin_request_seconds_count 1",
            "netsched_live_nodes{",
        ],
    );
}
