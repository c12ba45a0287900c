//! Pull scheduling over real UDP sockets on loopback: a pull scheduler
//! daemon (Draconis and every variant, Draconis-Server, R2P2, Sparrow),
//! executors that pull, and a client submitting jobs of several tasks.
//! Every test checks the client's accounting: each submitted task completed,
//! failed or timed out, none missing.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use netsched_config::pull::PullPolicy;
use netsched_config::workload::ServiceDist;
use netsched_node::metrics::Registry;
use netsched_node::pull::{
    PullClient, PullClientConfig, PullDaemon, PullReport, PullSwitchConfig, PullWorker,
    PullWorkerConfig,
};
use netsched_proto::{DraconisMessage, Message, TaskVec, WireTask};

/// Latency-sensitive tests share two cores: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

struct Daemon {
    stop: Arc<AtomicBool>,
    registry: Arc<Registry>,
    addr: SocketAddr,
    handle: Option<JoinHandle<()>>,
}

impl Daemon {
    fn start(cfg: PullSwitchConfig) -> Daemon {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let st = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut d = PullDaemon::bind(&cfg).expect("pull daemon binds");
            tx.send((d.registry(), d.local_addr())).unwrap();
            d.run(&st).unwrap();
        });
        let (registry, addr) = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        Daemon {
            stop,
            registry,
            addr,
            handle: Some(handle),
        }
    }

    fn kill(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            h.join().unwrap();
        }
    }

    fn metric(&self, name: &str, labels: &str) -> u64 {
        self.registry.value(name, labels).unwrap_or(0)
    }

    fn pull_drop(&self, reason: &str) -> u64 {
        self.metric("netsched_drops_total", &format!("{{reason=\"{reason}\"}}"))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
    }
}

struct Setup {
    daemon: Daemon,
    workers: PullWorker,
    worker_stop: Arc<AtomicBool>,
}

impl Setup {
    /// `executors` executors on one node, a daemon configured by `tweak`.
    fn start(
        policy: PullPolicy,
        executors: usize,
        tweak: impl FnOnce(&mut PullSwitchConfig, &mut PullWorkerConfig),
    ) -> Setup {
        let socks: Vec<UdpSocket> = (0..executors)
            .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        let addrs = socks.iter().map(|s| s.local_addr().unwrap()).collect();
        let mut scfg = PullSwitchConfig::new("127.0.0.1:0", policy, addrs);
        let mut wcfg = PullWorkerConfig::new("127.0.0.1:1".parse().unwrap(), policy, vec![]);
        wcfg.request_timeout_ms = 20;
        tweak(&mut scfg, &mut wcfg);
        let daemon = Daemon::start(scfg);
        wcfg.scheduler = daemon.addr;
        wcfg.listen = vec!["unused".into(); executors];
        let worker_stop = Arc::new(AtomicBool::new(false));
        let workers = PullWorker::start(&wcfg, socks, worker_stop.clone()).unwrap();
        Setup {
            daemon,
            workers,
            worker_stop,
        }
    }

    fn client(&self, rate: f64, ms: u64, service_us: f64, job_tasks: u32) -> PullClientConfig {
        let mut c = PullClientConfig::new(
            self.daemon.addr,
            rate,
            ms,
            ServiceDist::Fixed {
                value_us: service_us,
            },
        );
        c.job_tasks = job_tasks;
        c.timeout_ms = 200;
        c
    }

    fn stop(self) -> Arc<Registry> {
        let Setup {
            mut daemon,
            workers,
            worker_stop,
        } = self;
        let reg = workers.registry();
        worker_stop.store(true, Ordering::Relaxed);
        workers.join();
        daemon.kill();
        reg
    }
}

fn run_client(cfg: PullClientConfig) -> PullReport {
    PullClient::bind(cfg).unwrap().run()
}

fn assert_all_completed(r: &PullReport, what: &str) {
    assert!(r.accounted(), "{what}: not accounted: {}", r.summary());
    assert!(r.submitted > 0, "{what}: nothing submitted");
    assert_eq!(r.completed, r.submitted, "{what}: {}", r.summary());
    assert_eq!(r.unknown, 0, "{what}: {}", r.summary());
}

#[test]
fn every_pull_policy_completes_every_task_on_loopback() {
    let _g = serial();
    // Every pull scheduler (racksched-nodes runs a push data plane).
    for policy in PullPolicy::ALL.into_iter().filter(|p| p.plane().is_some()) {
        let s = Setup::start(policy, 4, |_, _| {});
        // 4 executors at 200 µs: 20 K tasks/s capacity; 2 K/s is load 0.1.
        let mut c = s.client(2_000.0, 400, 200.0, 3);
        if policy == PullPolicy::DraconisPriority {
            c.priority_weights = vec![1.0, 1.0, 1.0, 1.0];
        }
        let r = run_client(c);
        let name = policy.name();
        assert_all_completed(&r, name);
        let d = &s.daemon;
        let decided = d.metric("netsched_decisions_total", "");
        assert!(
            decided >= r.submitted,
            "{name}: {decided} decisions for {} tasks",
            r.submitted
        );
        let jobs = d.metric("netsched_rx_packets_total", "{type=\"job_submission\"}");
        assert!(jobs > 0, "{name}: no job_submission received");
        match policy {
            PullPolicy::R2p2Recirc | PullPolicy::Sparrow => assert_eq!(r.acks, 0, "{name}"),
            // One ack per job_submission packet (§4.3), each counting its
            // queued tasks.
            _ => {
                assert_eq!(r.acks, jobs, "{name}: {}", r.summary());
                assert_eq!(r.error_packets, 0, "{name}");
                assert_eq!(
                    r.acked_tasks,
                    r.submitted + r.timeout_resubmissions,
                    "{name}"
                );
            }
        }
        if policy == PullPolicy::Sparrow {
            // d = 2 probes per task, batch-sampled over 4 executors.
            let probes = d.metric("netsched_tx_packets_total", "{type=\"probe\"}");
            assert!(
                probes > r.submitted,
                "{probes} probes for {} tasks",
                r.submitted
            );
        }
        if policy == PullPolicy::Draconis {
            // Jobs of 3 tasks: the 2nd and 3rd are enqueued by recirculation.
            let recirc = d.metric("netsched_pull_recirculations_total", "");
            assert!(
                recirc >= 2 * jobs,
                "{recirc} recirculations for {jobs} jobs"
            );
        }
        let reg = s.stop();
        assert_eq!(reg.sum("netsched_worker_tasks_total"), decided, "{name}");
    }
}

#[test]
fn draconis_server_runs_recirculations_inline() {
    let _g = serial();
    let s = Setup::start(PullPolicy::DraconisServer, 2, |_, _| {});
    // Jobs of 20 tasks: three job_submission packets each (8 + 8 + 4, §4.3),
    // each acknowledged on its own.
    let r = run_client(s.client(2_000.0, 300, 100.0, 20));
    assert_all_completed(&r, "draconis-server");
    assert_eq!(r.submitted % 20, 0);
    let jobs = r.submitted / 20;
    assert_eq!(
        s.daemon
            .metric("netsched_rx_packets_total", "{type=\"job_submission\"}"),
        3 * jobs
    );
    assert_eq!(r.acks, 3 * jobs, "{}", r.summary());
    assert_eq!(
        s.daemon.metric("netsched_pull_recirculations_total", ""),
        0,
        "a server never recirculates through the port"
    );
    s.stop();
}

#[test]
fn full_queue_returns_tasks_that_are_resubmitted_until_done() {
    let _g = serial();
    // A queue of 4 entries and one executor: bursts of 8-task jobs overflow
    // it (§4.3 error_packet), the client resubmits the returned tasks.
    let s = Setup::start(PullPolicy::Draconis, 1, |sc, _| {
        sc.draconis.capacity = 4;
    });
    let mut c = s.client(4_000.0, 100, 50.0, 8);
    c.timeout_ms = 2_000;
    c.error_backoff_us = 500;
    let r = run_client(c);
    assert_all_completed(&r, "full queue");
    assert!(r.error_packets > 0, "{}", r.summary());
    assert!(r.error_resubmissions > 0, "{}", r.summary());
    let returned = s.daemon.metric("netsched_pull_tasks_returned_total", "");
    assert_eq!(returned, r.error_resubmissions, "{}", r.summary());
    assert_eq!(r.timeout_resubmissions, 0, "{}", r.summary());
    s.stop();
}

/// Closed loop (`max_outstanding`, used by `netsched bench pull`'s
/// saturation part): with an unbounded job rate the client keeps at most
/// 4 tasks unresolved, so a queue of 4 never overflows (the same queue
/// overflows under the open-loop test above), and the one executor is kept
/// busy: completions track its capacity.
#[test]
fn closed_loop_client_keeps_the_window_and_the_executor_busy() {
    let _g = serial();
    let s = Setup::start(PullPolicy::Draconis, 1, |sc, _| {
        sc.draconis.capacity = 4;
    });
    let ms = 300;
    let service_us = 200.0;
    let mut c = s.client(10_000_000.0, ms, service_us, 4);
    c.max_outstanding = 4;
    c.timeout_ms = 2_000;
    let r = run_client(c);
    assert_all_completed(&r, "closed loop");
    assert_eq!(r.error_packets, 0, "window exceeded: {}", r.summary());
    let capacity = ms as f64 * 1e3 / service_us;
    assert!(
        (r.submitted as f64) <= capacity + 4.0,
        "more completions than the executor can run: {}",
        r.summary()
    );
    assert!(
        (r.submitted as f64) >= 0.3 * capacity,
        "executor left idle: {}",
        r.summary()
    );
    s.stop();
}

#[test]
fn scheduler_restart_is_survived_by_timeout_and_resubmission() {
    let _g = serial();
    let mut s = Setup::start(PullPolicy::Draconis, 2, |_, wc| {
        wc.request_timeout_ms = 20;
    });
    let addr = s.daemon.addr;
    // 2 executors at 2 ms: 1 K tasks/s capacity; 600 tasks/s keeps a queue
    // in the switch that the restart loses.
    let mut c = s.client(600.0, 1_200, 2_000.0, 2);
    c.timeout_ms = 150;
    c.max_attempts = 20;
    let client = std::thread::spawn(move || run_client(c));
    std::thread::sleep(Duration::from_millis(400));
    s.daemon.kill();
    std::thread::sleep(Duration::from_millis(200));
    // Same address, empty queue: the executors' request timeouts re-find it.
    s.daemon = Daemon::start(PullSwitchConfig::new(
        &addr.to_string(),
        PullPolicy::Draconis,
        s.workers.addrs().to_vec(),
    ));
    let r = client.join().unwrap();
    assert_all_completed(&r, "restart");
    assert!(
        r.timeout_resubmissions > 0,
        "the restart lost queued tasks, so some must have been resubmitted: {}",
        r.summary()
    );
    let reg = s.stop();
    assert!(reg.sum("netsched_worker_request_timeouts_total") > 0);
}

#[test]
fn malformed_spoofed_and_misdirected_datagrams_are_counted_drops() {
    let _g = serial();
    let s = Setup::start(PullPolicy::Draconis, 2, |_, _| {});
    let d = &s.daemon;
    let rogue = UdpSocket::bind("127.0.0.1:0").unwrap();
    let send = |b: &[u8]| {
        rogue.send_to(b, d.addr).unwrap();
    };
    let task = WireTask {
        id: 1,
        ..Default::default()
    };
    let job = Message::Draconis(DraconisMessage::JobSubmission {
        job: 1,
        tasks: TaskVec::from_slice(&[task]).unwrap(),
    })
    .to_vec()
    .unwrap();
    send(&job[..job.len() - 3]); // truncated
    send(&[0x13, 0x42]); // unknown type
    send(&[0x13, 0x04, 0x00]); // trailing bytes after a no-op
    send(&[0x11, 0x07, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]); // a Horus keep-alive
    send(&[0x77]); // unknown family
                   // A task request from an address that is not an executor.
    send(
        &Message::Draconis(DraconisMessage::TaskRequest {
            node: 0,
            resources: u64::MAX,
        })
        .to_vec()
        .unwrap(),
    );
    // A completion sent to the scheduler (executors send those to clients).
    send(
        &Message::Draconis(DraconisMessage::Completion {
            task_id: 1,
            exec_ns: 1,
            executor: 0,
            status: netsched_proto::CompletionStatus::Ok,
        })
        .to_vec()
        .unwrap(),
    );
    // A get-task at a Draconis scheduler, from an executor address it does
    // not know.
    send(
        &Message::Draconis(DraconisMessage::GetTask { slot: 3 })
            .to_vec()
            .unwrap(),
    );
    let want = [
        ("truncated", 1),
        ("unknown_type", 1),
        ("trailing_bytes", 1),
        ("unsupported_family", 1),
        ("inconsistent", 1),
        ("unregistered_source", 2),
        ("wrong_role", 1),
    ];
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while want.iter().any(|(r, n)| d.pull_drop(r) < *n) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    for (reason, n) in want {
        assert_eq!(d.pull_drop(reason), n, "{reason}");
    }
    // Still serving.
    let r = run_client(s.client(500.0, 200, 100.0, 2));
    assert_all_completed(&r, "after garbage");
    s.stop();
}

#[test]
fn r2p2_keeps_at_most_its_bound_of_tasks_at_an_executor() {
    let _g = serial();
    // One executor, bound 2, tasks of 5 ms at 600/s: far above capacity, so
    // the switch holds tasks by recirculation and the budget returns some.
    let s = Setup::start(PullPolicy::R2p2Recirc, 1, |sc, _| {
        sc.r2p2.jbsq_bound = 2;
        sc.r2p2.recirc_budget = Some(64);
    });
    let mut c = s.client(600.0, 100, 5_000.0, 1);
    c.timeout_ms = 5_000;
    c.error_backoff_us = 2_000;
    let r = run_client(c);
    assert_all_completed(&r, "r2p2 overload");
    let d = &s.daemon;
    assert!(d.pull_drop("recirculation_budget") > 0, "{}", r.summary());
    assert_eq!(r.error_resubmissions, d.pull_drop("recirculation_budget"));
    assert!(d.metric("netsched_pull_recirculations_total", "") > 0);
    s.stop();
}

/// A job of one task (id 1) whose function parameter (the synthetic
/// service time, ns) is `fn_par`.
fn one_task_job(fn_par: u64) -> Vec<u8> {
    Message::Draconis(DraconisMessage::JobSubmission {
        job: 1,
        tasks: TaskVec::from_slice(&[WireTask {
            id: 1,
            fn_par,
            ..Default::default()
        }])
        .unwrap(),
    })
    .to_vec()
    .unwrap()
}

/// Issue 16 item 4: addresses seen once fill the client table; once they
/// are idle (no job, no task queued) their entries are reused, so a new
/// client is served instead of refused until restart.
#[test]
fn a_full_client_table_recovers_for_a_new_client() {
    let _g = serial();
    let s = Setup::start(PullPolicy::Draconis, 2, |c, _| {
        c.max_clients = 8;
        c.client_idle_ms = 300;
    });
    let d = &s.daemon;
    let job = one_task_job(0);
    let rogues: Vec<UdpSocket> = (0..40)
        .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
        .collect();
    for r in &rogues {
        r.send_to(&job, d.addr).unwrap();
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while d.pull_drop("client_table_full") < 32 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(d.pull_drop("client_table_full"), 32);
    // Past the idle time the rogues' entries may be reused.
    std::thread::sleep(Duration::from_millis(400));
    let r = run_client(s.client(500.0, 200, 100.0, 2));
    assert_all_completed(&r, "after the table filled");
    assert_eq!(d.pull_drop("client_table_full"), 32);
    s.stop();
}

/// One host cycling 4,600 source ports (here 200, at a cap of 4) cannot
/// fill the client table: past its share each new port's job comes back
/// (`client_source_limit`) and a new client on another host is served in
/// full at once, without waiting for the idle time (30 s).
#[test]
fn one_host_cycling_ports_cannot_lock_out_a_new_client() {
    let _g = serial();
    let s = Setup::start(PullPolicy::Draconis, 2, |c, _| {
        c.max_clients = 16;
        c.max_clients_per_host = 4;
    });
    let d = &s.daemon;
    let job = one_task_job(0);
    let rogues: Vec<UdpSocket> = (0..200)
        .map(|_| UdpSocket::bind("127.0.0.2:0").unwrap())
        .collect();
    for r in &rogues {
        r.send_to(&job, d.addr).unwrap();
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while d.pull_drop("client_source_limit") < 196 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(d.pull_drop("client_source_limit"), 196);
    let r = run_client(s.client(500.0, 200, 100.0, 2));
    assert_all_completed(&r, "beside the host at its share");
    assert_eq!(d.pull_drop("client_table_full"), 0);
    s.stop();
}

/// Ingress (`clients`): a pull scheduler that names its client networks
/// drops and counts every job from elsewhere, answers it with nothing and
/// gives it no client-table entry; the listed client completes everything.
#[test]
fn jobs_from_outside_the_client_networks_are_dropped_and_counted() {
    let _g = serial();
    let s = Setup::start(PullPolicy::Draconis, 2, |c, _| {
        c.clients = Some(vec!["127.0.0.1/32".parse().unwrap()]);
        c.max_clients = 4;
    });
    let d = &s.daemon;
    // A stranger's job asking for 31 years of an executor.
    let job = one_task_job(31 * 365 * 86_400 * 1_000_000_000);
    let strangers: Vec<UdpSocket> = (0..50)
        .map(|_| UdpSocket::bind("127.0.0.2:0").unwrap())
        .collect();
    for st in &strangers {
        st.send_to(&job, d.addr).unwrap();
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while d.pull_drop("unregistered_source") < 50 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(d.pull_drop("unregistered_source"), 50);
    let r = run_client(s.client(500.0, 200, 100.0, 2));
    assert_all_completed(&r, "beside the strangers");
    assert_eq!(d.pull_drop("client_table_full"), 0);
    let mut buf = [0u8; 64];
    strangers[0].set_nonblocking(true).unwrap();
    assert!(
        strangers[0].recv_from(&mut buf).is_err(),
        "a stranger was answered"
    );
    s.stop();
}
