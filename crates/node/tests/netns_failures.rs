//! Multi-host tests: every rack (leaf daemon + worker agents), the spine and
//! the controller/client in their own network namespace, joined by veth
//! pairs on a bridge (`netsched_node::netns`). Failures injected: a worker
//! killed, a leaf scheduler killed, a link cut and restored, the controller
//! restarted, 1 % packet loss. Each test asserts the cluster keeps serving
//! with what remains and the client accounts for every task.
//!
//! Needs root for `ip netns`; skipped with a message otherwise.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use netsched_node::controller::{Controller, ControllerConfig};
use netsched_node::metrics::Registry;
use netsched_node::netns::{Host, Lab, LabError};
use netsched_node::{
    Client, ClientConfig, ClientReport, SwitchConfig, SwitchDaemon, Worker, WorkerConfig,
};

const POOL: u16 = 1;
const TOKEN: &str = "netns-test-token";

/// A component running on its own thread(s) with its own stop flag.
struct Proc {
    stop: Arc<AtomicBool>,
    registry: Arc<Registry>,
    handle: Option<JoinHandle<Result<(), String>>>,
}

impl Proc {
    fn kill(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn_switch(host: &Host, toml: String) -> Proc {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let st = stop.clone();
    let handle = host.spawn(move || {
        let cfg = SwitchConfig::from_toml(&toml).expect("switch config");
        let mut d = SwitchDaemon::bind(&cfg).expect("bind switch");
        tx.send(d.registry()).unwrap();
        d.run(&st).map_err(|e| e.to_string())
    });
    let registry = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("switch started");
    Proc {
        stop,
        registry,
        handle: Some(std::thread::spawn(move || handle.join().unwrap()?)),
    }
}

fn spawn_worker(host: &Host, toml: String) -> Proc {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let st = stop.clone();
    let handle = host.spawn(move || {
        let cfg = WorkerConfig::from_toml(&toml).expect("worker config");
        let w = Worker::bind(&cfg, st).expect("bind worker");
        tx.send(w.registry()).unwrap();
        w.join();
        Ok(())
    });
    let registry = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("worker started");
    Proc {
        stop,
        registry,
        handle: Some(std::thread::spawn(move || handle.join().unwrap()?)),
    }
}

struct Ctl {
    stop: Arc<AtomicBool>,
    c: Option<Controller>,
}

impl Ctl {
    fn kill(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(c) = self.c.take() {
            c.join();
        }
    }
    fn get(&self) -> &Controller {
        self.c.as_ref().unwrap()
    }
}

impl Drop for Ctl {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Spine in one namespace, controller + client in another, and `racks`
/// namespaces each with a leaf and one worker agent per executor (so one
/// executor can be killed alone).
struct Dc {
    lab: Lab,
    ctl_host: Host,
    spine_host: Host,
    rack_hosts: Vec<Host>,
    execs: usize,
    spine: Proc,
    leaves: Vec<Proc>,
    workers: Vec<Vec<Proc>>,
    ctl: Ctl,
    state_file: std::path::PathBuf,
}

struct Opts {
    racks: usize,
    execs: usize,
    drop_rate: f64,
    loss_until_ms: u64,
}

fn ctl_addr(h: &Host) -> String {
    h.at(7000)
}

impl Dc {
    fn start(tag: &str, o: Opts) -> Option<Dc> {
        let mut lab = match Lab::new(tag) {
            Ok(l) => l,
            Err(LabError::Skip(e)) => {
                eprintln!("SKIP {tag}: `ip netns add` not permitted here: {e}");
                return None;
            }
            Err(e) => panic!("{e}"),
        };
        let ctl_host = lab.host("ctl").unwrap();
        let spine_host = lab.host("spn").unwrap();
        let rack_hosts: Vec<Host> = (0..o.racks).map(|_| lab.host("rck").unwrap()).collect();
        let fault = |seed: u64| {
            format!(
                "fault = {{ drop_rate = {}, seed = {seed}, until_ms = {} }}\n",
                o.drop_rate, o.loss_until_ms
            )
        };
        let leaves_list: Vec<String> = rack_hosts
            .iter()
            .map(|h| format!("\"{}\"", h.at(7101)))
            .collect();
        let spine = spawn_switch(
            &spine_host,
            format!(
                "listen = \"{}\"\ncontroller = \"{}\"\nstatus_ms = 50\nseed = 3\n{}\
                 [[instance]]\npool = {POOL}\nrole = \"spine\"\npolicy = \"horus\"\n\
                 downstream = [{}]\nrack_workers = [{}]\n",
                spine_host.at(7100),
                ctl_addr(&ctl_host),
                fault(100),
                leaves_list.join(", "),
                vec![o.execs.to_string(); o.racks].join(", "),
            ),
        );
        let mut leaves = Vec::new();
        let mut workers = Vec::new();
        for (r, h) in rack_hosts.iter().enumerate() {
            let execs: Vec<String> = (0..o.execs)
                .map(|e| format!("\"{}\"", h.at(7201 + e as u16)))
                .collect();
            leaves.push(spawn_switch(
                h,
                format!(
                    "listen = \"{}\"\ncontroller = \"{}\"\nstatus_ms = 50\nseed = {}\n{}\
                     [[instance]]\npool = {POOL}\nrole = \"leaf\"\npolicy = \"horus\"\nrack = {r}\n\
                     upstream = [\"{}\"]\ndownstream = [{}]\nheartbeat_timeout_ms = 250\n",
                    h.at(7101),
                    ctl_addr(&ctl_host),
                    10 + r,
                    fault(200 + r as u64),
                    spine_host.at(7100),
                    execs.join(", "),
                ),
            ));
            workers.push(
                (0..o.execs)
                    .map(|e| {
                        spawn_worker(
                            h,
                            format!(
                                "listen = [\"{}\"]\nfirst_id = {e}\nleaf = \"{}\"\npool = {POOL}\nheartbeat_ms = 50\n",
                                h.at(7201 + e as u16),
                                h.at(7101)
                            ),
                        )
                    })
                    .collect(),
            );
        }
        let state_file =
            std::env::temp_dir().join(format!("netsched-ctl-{}-{}.json", tag, std::process::id()));
        let _ = std::fs::remove_file(&state_file);
        let mut dc = Dc {
            lab,
            ctl_host,
            spine_host,
            rack_hosts,
            execs: o.execs,
            spine,
            leaves,
            workers,
            ctl: Ctl {
                stop: Arc::new(AtomicBool::new(false)),
                c: None,
            },
            state_file,
        };
        dc.ctl = dc.start_controller();
        Some(dc)
    }

    fn controller_config(&self) -> ControllerConfig {
        let mut t = format!(
            "listen = \"{}\"\nadmin = \"{}\"\ntoken = \"{TOKEN}\"\nstate = \"{}\"\n\
             daemon_timeout_ms = 300\ntick_ms = 20\nresend_ms = 60\n\
             [[pool]]\nid = {POOL}\nspines = [\"{}\"]\n",
            ctl_addr(&self.ctl_host),
            self.ctl_host.at(7080),
            self.state_file.display(),
            self.spine_host.at(7100),
        );
        for h in &self.rack_hosts {
            let execs: Vec<String> = (0..self.execs)
                .map(|e| format!("\"{}\"", h.at(7201 + e as u16)))
                .collect();
            t += &format!(
                "[[pool.rack]]\nleaf = \"{}\"\nworkers = [{}]\n",
                h.at(7101),
                execs.join(", ")
            );
        }
        ControllerConfig::from_toml(&t).expect("controller config")
    }

    fn start_controller(&self) -> Ctl {
        let cfg = self.controller_config();
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let c = self
            .ctl_host
            .run(move || Controller::start(&cfg, st))
            .unwrap()
            .expect("controller");
        Ctl { stop, c: Some(c) }
    }

    /// Runs a client in the controller's namespace against the spine.
    fn client(
        &self,
        rate: f64,
        duration_ms: u64,
        seed: u64,
    ) -> JoinHandle<Result<ClientReport, String>> {
        let t = format!(
            "targets = [{{ addr = \"{}\" }}]\npool = {POOL}\napp_id = {seed}\nrate = {rate}\n\
             duration_ms = {duration_ms}\nservice = {{ kind = \"exp\", mean_us = 200 }}\n\
             timeout_ms = 400\nseed = {seed}\nbind = \"{}\"\n",
            self.spine_host.at(7100),
            self.ctl_host.at(0),
        );
        self.ctl_host.spawn(move || {
            let cfg = ClientConfig::from_toml(&t).unwrap();
            Client::bind(cfg).unwrap().run()
        })
    }

    fn spine_metric(&self, name: &str, labels: &str) -> u64 {
        self.spine.registry.value(name, labels).unwrap_or(0)
    }

    fn topology(&self) -> serde_json::Value {
        self.ctl.get().topology_json()
    }
}

fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn spine_admitted(dc: &Dc) -> Vec<bool> {
    let t = dc.topology();
    serde_json::from_value(t["pools"][0]["spines"][0]["admitted"].clone()).unwrap_or_default()
}

fn spine_rack_workers(dc: &Dc) -> Vec<u32> {
    let t = dc.topology();
    serde_json::from_value(t["pools"][0]["spines"][0]["rack_workers"].clone()).unwrap_or_default()
}

fn check_accounting(r: &ClientReport) {
    assert!(r.submitted > 0);
    assert!(
        r.accounted(),
        "every task completed, failed or timed out: {}",
        r.summary()
    );
}

#[test]
fn worker_and_leaf_failures_are_survived() {
    let Some(mut dc) = Dc::start(
        "kill",
        Opts {
            racks: 3,
            execs: 2,
            drop_rate: 0.0,
            loss_until_ms: 0,
        },
    ) else {
        return;
    };
    wait_for("spine status", Duration::from_secs(3), || {
        spine_admitted(&dc) == vec![true; 3]
    });
    // 6 workers of Exp(200 µs): 12,000 tasks/s saturate; run at ~25 %.
    let client = dc.client(3000.0, 2400, 1);
    std::thread::sleep(Duration::from_millis(500));
    // Kill one worker agent of rack 0: the leaf times it out (§A.3) and the
    // controller installs the rack's new 1/w (w = 1) at the spine (§A.2).
    dc.workers[0][1].kill();
    wait_for(
        "rack 0's 1/w to follow its live workers",
        Duration::from_secs(2),
        || spine_rack_workers(&dc).first() == Some(&1),
    );
    // Kill rack 2's leaf scheduler: the controller drops the rack at the spine.
    dc.leaves[2].kill();
    wait_for(
        "rack 2 dropped at the spine",
        Duration::from_secs(2),
        || spine_admitted(&dc) == vec![true, true, false],
    );
    let r = client.join().unwrap().unwrap();
    check_accounting(&r);
    // Only tasks in flight at a failure, or sent to rack 2 before the
    // controller noticed (~300 ms of a third of the load), may be lost.
    assert!(
        r.completed as f64 >= 0.75 * r.submitted as f64,
        "{}",
        r.summary()
    );
    let reg = dc.ctl.get().registry();
    assert!(
        reg.value("netsched_controller_failures_total", "{kind=\"worker\"}")
            .unwrap()
            >= 1
    );
    assert!(
        reg.value("netsched_controller_failures_total", "{kind=\"leaf\"}")
            .unwrap()
            >= 1
    );
    // What remains keeps serving: a second run completes everything.
    let r2 = dc.client(2000.0, 600, 2).join().unwrap().unwrap();
    check_accounting(&r2);
    assert_eq!(r2.completed, r2.submitted, "{}", r2.summary());
    // The dead worker got no task in the second run.
    let done = |p: &Proc| p.registry.sum("netsched_worker_tasks_total");
    let before = done(&dc.workers[1][0]);
    let r3 = dc.client(1000.0, 300, 3).join().unwrap().unwrap();
    assert_eq!(r3.completed, r3.submitted, "{}", r3.summary());
    assert!(done(&dc.workers[1][0]) > before, "live racks serve");
}

#[test]
fn cut_link_and_controller_restart() {
    let Some(mut dc) = Dc::start(
        "link",
        Opts {
            racks: 3,
            execs: 2,
            drop_rate: 0.0,
            loss_until_ms: 0,
        },
    ) else {
        return;
    };
    wait_for("spine status", Duration::from_secs(3), || {
        spine_admitted(&dc) == vec![true; 3]
    });
    let client = dc.client(3000.0, 2600, 4);
    std::thread::sleep(Duration::from_millis(300));
    // Cut rack 1 off: the controller no longer hears its leaf and drops it
    // at the spine; tasks already sent there time out.
    dc.lab.set_link(&dc.rack_hosts[1], false).unwrap();
    wait_for("rack 1 dropped", Duration::from_secs(2), || {
        spine_admitted(&dc) == vec![true, false, true]
    });
    // Restore it: the rack is re-admitted and resynced.
    dc.lab.set_link(&dc.rack_hosts[1], true).unwrap();
    wait_for("rack 1 back", Duration::from_secs(2), || {
        spine_admitted(&dc) == vec![true; 3]
    });
    // Restart the controller while the client runs: the data path does not
    // need it.
    dc.ctl.kill();
    let served_before = dc.spine_metric("netsched_decisions_total", "{decision=\"idle\"}")
        + dc.spine_metric("netsched_decisions_total", "{decision=\"sampled\"}");
    std::thread::sleep(Duration::from_millis(400));
    dc.spine
        .registry
        .value("netsched_rx_packets_total", "{type=\"task_first\"}");
    let served_down = dc.spine_metric("netsched_decisions_total", "{decision=\"idle\"}")
        + dc.spine_metric("netsched_decisions_total", "{decision=\"sampled\"}");
    assert!(
        served_down > served_before + 100,
        "the cluster serves while the controller is down"
    );
    dc.ctl = dc.start_controller();
    // The new controller re-learns every daemon from its reports and keeps
    // the cluster as it was.
    wait_for("re-learned topology", Duration::from_secs(2), || {
        let t = dc.topology();
        t["pools"][0]["racks"].as_array().is_some_and(|rs| {
            rs.iter()
                .all(|r| r["alive"] == true && r["live_workers"] == 2)
        }) && spine_admitted(&dc) == vec![true; 3]
    });
    let r = client.join().unwrap().unwrap();
    check_accounting(&r);
    assert!(r.timed_out > 0 || r.completed == r.submitted);
    assert!(
        r.completed as f64 >= 0.8 * r.submitted as f64,
        "{}",
        r.summary()
    );
    let reg = dc.ctl.get().registry();
    assert_eq!(
        reg.value("netsched_controller_failures_total", "{kind=\"leaf\"}")
            .unwrap(),
        0
    );
}

#[test]
fn one_percent_loss_is_survived_and_idle_state_heals() {
    let Some(dc) = Dc::start(
        "loss",
        Opts {
            racks: 3,
            execs: 2,
            drop_rate: 0.01,
            loss_until_ms: 1800,
        },
    ) else {
        return;
    };
    wait_for("spine status", Duration::from_secs(3), || {
        spine_admitted(&dc) == vec![true; 3]
    });
    // Load ≈ 0.5 so racks keep turning busy and idle: many Idle Add/Remove.
    let r = dc.client(6000.0, 1800, 5).join().unwrap().unwrap();
    check_accounting(&r);
    let lost = dc.spine_metric("netsched_fault_drops_total", "")
        + dc.leaves
            .iter()
            .map(|l| {
                l.registry
                    .value("netsched_fault_drops_total", "")
                    .unwrap_or(0)
            })
            .sum::<u64>();
    assert!(lost > 50, "loss was injected ({lost})");
    // Lost tasks and replies time out; none goes missing.
    assert!(
        r.completed as f64 >= 0.9 * r.submitted as f64,
        "{}",
        r.summary()
    );
    // After the loss ends, traffic repairs the spine's view (§A.3): a task
    // the spine sends with the wrong idleSelected makes the leaf re-send
    // its Idle Add/Remove. Then, idle, every rack is in the idle list.
    let r2 = dc.client(6000.0, 500, 6).join().unwrap().unwrap();
    assert_eq!(r2.completed, r2.submitted, "{}", r2.summary());
    wait_for(
        "spine idle list = all racks",
        Duration::from_secs(2),
        || dc.spine_metric("netsched_idle_nodes", "{pool=\"1\"}") == 3,
    );
    // And the leaves agree: every worker is in the idle list (which may
    // also hold stale duplicates a leaf discards when it pops them).
    wait_for(
        "leaf idle lists hold every worker",
        Duration::from_secs(2),
        || {
            dc.leaves.iter().all(|l| {
                l.registry
                    .value("netsched_idle_nodes", "{pool=\"1\"}")
                    .unwrap()
                    >= 2
            })
        },
    );
}

#[test]
fn admin_api_adds_and_removes_workers_at_runtime() {
    let Some(mut dc) = Dc::start(
        "admn",
        Opts {
            racks: 2,
            execs: 1,
            drop_rate: 0.0,
            loss_until_ms: 0,
        },
    ) else {
        return;
    };
    wait_for("spine status", Duration::from_secs(3), || {
        spine_admitted(&dc) == vec![true; 2]
    });
    let admin: SocketAddr = dc.ctl_host.at(7080).parse().unwrap();
    let call = |m: &str, p: &str, tok: Option<&str>, b: Option<&str>| {
        let (m, p, tok, b) = (
            m.to_string(),
            p.to_string(),
            tok.map(String::from),
            b.map(String::from),
        );
        dc.ctl_host
            .run(move || {
                netsched_node::controller::http(admin, &m, &p, tok.as_deref(), b.as_deref())
            })
            .unwrap()
            .unwrap()
    };
    assert_eq!(call("GET", "/v1/topology", None, None).0, 401);
    assert_eq!(
        call("GET", "/v1/topology", Some("wrong-token-123"), None).0,
        401
    );
    assert_eq!(call("GET", "/healthz", None, None).0, 200);
    // A second worker agent joins rack 1 at runtime.
    let h = dc.rack_hosts[1].clone();
    let (code, body) = call(
        "POST",
        "/v1/workers",
        Some(TOKEN),
        Some(&format!(
            "{{\"pool\": 1, \"rack\": 1, \"addr\": \"{}\"}}",
            h.at(7202)
        )),
    );
    assert_eq!(code, 201, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["node"], 1);
    let id = v["id"].as_u64().unwrap();
    dc.workers[1].push(spawn_worker(
        &h,
        format!(
            "listen = [\"{}\"]\nfirst_id = 1\nleaf = \"{}\"\npool = {POOL}\nheartbeat_ms = 50\n",
            h.at(7202),
            h.at(7101)
        ),
    ));
    wait_for(
        "rack 1 has 2 live workers at the spine",
        Duration::from_secs(2),
        || spine_rack_workers(&dc).get(1) == Some(&2),
    );
    let r = dc.client(2000.0, 500, 7).join().unwrap().unwrap();
    assert_eq!(r.completed, r.submitted, "{}", r.summary());
    let new_done = dc.workers[1][1].registry.sum("netsched_worker_tasks_total");
    assert!(new_done > 0, "the added worker serves");
    // Remove it again: it keeps heartbeating but gets no more tasks.
    let (code, body) = call("DELETE", &format!("/v1/workers/{id}"), Some(TOKEN), None);
    assert_eq!(code, 200, "{body}");
    wait_for("rack 1 back to 1 worker", Duration::from_secs(2), || {
        spine_rack_workers(&dc).get(1) == Some(&1)
    });
    let r = dc.client(2000.0, 500, 8).join().unwrap().unwrap();
    assert_eq!(r.completed, r.submitted, "{}", r.summary());
    assert_eq!(
        dc.workers[1][1].registry.sum("netsched_worker_tasks_total"),
        new_done,
        "a removed worker gets no task"
    );
    // The change survives a controller restart (state file).
    dc.ctl.kill();
    dc.ctl = dc.start_controller();
    let t = dc.topology();
    assert_eq!(t["pools"][0]["racks"][1]["workers"][1]["removed"], true);
    assert_eq!(
        call("DELETE", "/v1/workers/99999", Some(TOKEN), None).0,
        404
    );
    assert_eq!(
        call("POST", "/v1/workers", Some(TOKEN), Some("{\"pool\": 1}")).0,
        400
    );
    let _ = std::fs::remove_file(&dc.state_file);
}
