//! Pull scheduling across hosts: the scheduler, two racks of executors and
//! the client each in their own network namespace, joined by veth pairs on a
//! bridge (`netsched_lab::netns`). Failures: the scheduler restarted (its
//! queue lost) and a rack's link cut. The client must account for every
//! task and complete all of them with what remains.
//!
//! Needs root for `ip netns`; otherwise each test prints `SKIP` and passes,
//! unless `NETSCHED_REQUIRE_NETNS=1` (CI), which makes it fail
//! (`netsched_lab::netns::REQUIRE_NETNS_ENV`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use netsched_config::pull::PullPolicy;
use netsched_config::workload::ServiceDist;
use netsched_lab::netns::{Host, Lab, LabError, NetnsError, REQUIRE_NETNS_ENV};
use netsched_node::metrics::Registry;
use netsched_node::pull::{
    PullClient, PullClientConfig, PullDaemon, PullReport, PullSwitchConfig, PullWorker,
    PullWorkerConfig,
};

const SCHED_PORT: u16 = 7300;
const EXECS_PER_RACK: usize = 2;

struct Running {
    stop: Arc<AtomicBool>,
    registry: Arc<Registry>,
    /// Outer result: entering the namespace; inner: the component's run.
    handle: Option<JoinHandle<Result<Result<(), String>, NetnsError>>>,
}

impl Running {
    fn kill(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let ran = h.join().expect("thread").expect("namespace");
            ran.expect("component ran");
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn spawn_scheduler(host: &Host, executors: Vec<SocketAddr>) -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let st = stop.clone();
    let listen = host.at(SCHED_PORT);
    let handle = host.spawn(move || {
        let cfg = PullSwitchConfig::new(&listen, PullPolicy::Draconis, executors);
        let mut d = PullDaemon::bind(&cfg)?;
        tx.send(d.registry()).map_err(|e| e.to_string())?;
        d.run(&st).map_err(|e| e.to_string())
    });
    let registry = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("scheduler up");
    Running {
        stop,
        registry,
        handle: Some(handle),
    }
}

fn spawn_rack(host: &Host, rack: u32, scheduler: SocketAddr) -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let st = stop.clone();
    let listen: Vec<String> = (0..EXECS_PER_RACK)
        .map(|e| host.at(7400 + e as u16))
        .collect();
    let handle = host.spawn(move || {
        let mut cfg = PullWorkerConfig::new(scheduler, PullPolicy::Draconis, listen);
        cfg.first_id = rack * EXECS_PER_RACK as u32;
        cfg.node = rack;
        cfg.retry_us = 100;
        cfg.request_timeout_ms = 30;
        let w = PullWorker::bind(&cfg, st)?;
        tx.send(w.registry()).map_err(|e| e.to_string())?;
        w.join();
        Ok(())
    });
    let registry = rx.recv_timeout(Duration::from_secs(5)).expect("rack up");
    Running {
        stop,
        registry,
        handle: Some(handle),
    }
}

struct Dc {
    lab: Lab,
    sched_host: Host,
    client_host: Host,
    scheduler: Running,
    racks: Vec<Running>,
    rack_hosts: Vec<Host>,
    executors: Vec<SocketAddr>,
}

impl Dc {
    fn start(tag: &str) -> Option<Dc> {
        let mut lab = match Lab::new(tag) {
            Ok(l) => l,
            Err(LabError::Skip(e)) => {
                eprintln!(
                    "SKIP {tag}: `ip netns add` not permitted here ({e}); \
                     {REQUIRE_NETNS_ENV}=1 makes this a failure"
                );
                return None;
            }
            Err(e) => panic!("{e}"),
        };
        let sched_host = lab.host("sch").unwrap();
        let client_host = lab.host("cli").unwrap();
        let rack_hosts: Vec<Host> = (0..2).map(|_| lab.host("rck").unwrap()).collect();
        let executors: Vec<SocketAddr> = rack_hosts
            .iter()
            .flat_map(|h| (0..EXECS_PER_RACK).map(|e| h.at(7400 + e as u16).parse().unwrap()))
            .collect();
        let scheduler = spawn_scheduler(&sched_host, executors.clone());
        let sched_addr: SocketAddr = sched_host.at(SCHED_PORT).parse().unwrap();
        let racks = rack_hosts
            .iter()
            .enumerate()
            .map(|(r, h)| spawn_rack(h, r as u32, sched_addr))
            .collect();
        Some(Dc {
            lab,
            sched_host,
            client_host,
            scheduler,
            racks,
            rack_hosts,
            executors,
        })
    }

    fn sched_addr(&self) -> SocketAddr {
        self.sched_host.at(SCHED_PORT).parse().unwrap()
    }

    /// The client runs in its own namespace, on its own thread.
    fn client(&self, rate: f64, ms: u64, service_us: f64) -> JoinHandle<ClientRun> {
        let mut cfg = PullClientConfig::new(
            self.sched_addr(),
            rate,
            ms,
            ServiceDist::Fixed {
                value_us: service_us,
            },
        );
        cfg.bind = self.client_host.at(7500);
        cfg.job_tasks = 2;
        cfg.timeout_ms = 150;
        cfg.max_attempts = 20;
        self.client_host.spawn(move || {
            PullClient::bind(cfg)
                .map(|mut c| c.run())
                .map_err(String::from)
        })
    }

    fn rack_tasks(&self, r: usize) -> u64 {
        self.racks[r].registry.sum("netsched_worker_tasks_total")
    }
}

/// Outer result: entering the namespace; inner: binding the client.
type ClientRun = Result<Result<PullReport, String>, NetnsError>;

fn report(h: JoinHandle<ClientRun>) -> PullReport {
    h.join()
        .expect("client thread")
        .expect("namespace")
        .expect("client ran")
}

fn assert_all_completed(r: &PullReport, what: &str) {
    assert!(r.accounted(), "{what}: {}", r.summary());
    assert!(r.submitted > 0, "{what}");
    assert_eq!(r.completed, r.submitted, "{what}: {}", r.summary());
}

#[test]
fn draconis_across_namespaces_survives_a_scheduler_restart() {
    let Some(mut dc) = Dc::start("pullrst") else {
        return;
    };
    // 4 executors at 2 ms: 2 K tasks/s; 1.2 K/s keeps a queue to lose.
    let client = dc.client(1_200.0, 1_500, 2_000.0);
    std::thread::sleep(Duration::from_millis(500));
    dc.scheduler.kill();
    std::thread::sleep(Duration::from_millis(200));
    dc.scheduler = spawn_scheduler(&dc.sched_host, dc.executors.clone());
    let r = report(client);
    assert_all_completed(&r, "scheduler restart");
    assert!(r.timeout_resubmissions > 0, "{}", r.summary());
    // Both racks served, through the bridge.
    assert!(dc.rack_tasks(0) > 0 && dc.rack_tasks(1) > 0);
    // The restarted scheduler assigned work: executors found it again.
    assert!(dc.scheduler.registry.sum("netsched_decisions_total") > 0);
    drop(dc.racks.drain(..));
    drop(dc.lab);
}

#[test]
fn draconis_across_namespaces_survives_a_cut_rack_link() {
    let Some(mut dc) = Dc::start("pullcut") else {
        return;
    };
    let client = dc.client(800.0, 1_500, 2_000.0);
    std::thread::sleep(Duration::from_millis(400));
    dc.lab.set_link(&dc.rack_hosts[1], false).unwrap();
    let before = dc.rack_tasks(1);
    std::thread::sleep(Duration::from_millis(600));
    // While cut, rack 1 gets nothing (it cannot even ask).
    let during = dc.rack_tasks(1);
    assert!(
        during <= before + EXECS_PER_RACK as u64,
        "{before} -> {during}"
    );
    dc.lab.set_link(&dc.rack_hosts[1], true).unwrap();
    let r = report(client);
    assert_all_completed(&r, "cut link");
    // Rack 1 was back after the link returned (its request timeouts
    // re-found the scheduler).
    assert!(dc.rack_tasks(1) > during, "rack 1 never served again");
    drop(dc.racks.drain(..));
}
