//! Multi-host tests: every rack (leaf daemon + worker agents), the spine and
//! the controller/client in their own network namespace, joined by veth
//! pairs on a bridge (`netsched_lab::netns`). Failures injected: a worker
//! killed, a leaf scheduler killed, a link cut and restored, the controller
//! restarted, 1 % packet loss on every link, a spine killed under a client
//! that follows the controller's topology. Each test asserts the cluster
//! keeps serving with what remains and the client accounts for every task.
//!
//! Needs root for `ip netns`; skipped with a loud message otherwise, and
//! failed instead with `NETSCHED_REQUIRE_NETNS=1` (`netns::skip`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use netsched_lab::netns::{self, Host, Lab, LabError};
use netsched_node::controller::{Controller, ControllerConfig};
use netsched_node::metrics::Registry;
use netsched_node::{
    Client, ClientConfig, ClientReport, SwitchConfig, SwitchDaemon, Worker, WorkerConfig,
};

const POOL: u16 = 1;
const TOKEN: &str = "netns-test-token";
/// The cluster key every controller and daemon of these tests shares.
const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

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

/// Each spine in its own namespace, controller + client in another, and
/// `racks` namespaces each with a leaf and one worker agent per executor
/// (so one executor can be killed alone). Rack r is linked to spine
/// r mod spines.
struct Dc {
    lab: Lab,
    ctl_host: Host,
    spine_hosts: Vec<Host>,
    rack_hosts: Vec<Host>,
    execs: usize,
    spines: Vec<Proc>,
    leaves: Vec<Proc>,
    workers: Vec<Vec<Proc>>,
    ctl: Ctl,
    state_file: std::path::PathBuf,
}

struct Opts {
    spines: usize,
    racks: usize,
    execs: usize,
    /// Loss at every receiver: spines, leaves and worker agents (the
    /// client takes its own, `Dc::client_with`).
    drop_rate: f64,
    loss_until_ms: u64,
    /// The spines schedule in XDP (`datapath = "xdp"`, generic mode on
    /// their `eth0`) rather than in the socket daemon.
    spine_xdp: bool,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            spines: 1,
            racks: 3,
            execs: 2,
            drop_rate: 0.0,
            loss_until_ms: 0,
            spine_xdp: false,
        }
    }
}

fn ctl_addr(h: &Host) -> String {
    h.at(7000)
}

impl Dc {
    fn start(tag: &str, o: Opts) -> Option<Dc> {
        let mut lab = match Lab::new(tag) {
            Ok(l) => l,
            Err(LabError::Skip(e)) => {
                netns::skip(tag, &format!("`ip netns add` not permitted: {e}"));
                return None;
            }
            Err(e) => panic!("{e}"),
        };
        let ctl_host = lab.host("ctl").unwrap();
        let spine_hosts: Vec<Host> = (0..o.spines).map(|_| lab.host("spn").unwrap()).collect();
        let rack_hosts: Vec<Host> = (0..o.racks).map(|_| lab.host("rck").unwrap()).collect();
        let fault = |seed: u64| {
            format!(
                "fault = {{ drop_rate = {}, seed = {seed}, until_ms = {} }}\n",
                o.drop_rate, o.loss_until_ms
            )
        };
        let spine_datapath = if o.spine_xdp {
            "datapath = \"xdp\"\n[xdp]\ninterface = \"eth0\"\nmode = \"generic\"\ncpu = 1\n"
        } else {
            ""
        };
        let leaves_list: Vec<String> = rack_hosts
            .iter()
            .map(|h| format!("\"{}\"", h.at(7101)))
            .collect();
        // Every spine lists every rack (pool-wide rack ids); the controller
        // admits at each only the racks linked to it.
        let spines: Vec<Proc> = spine_hosts
            .iter()
            .enumerate()
            .map(|(s, h)| {
                spawn_switch(
                    h,
                    format!(
                        "listen = \"{}\"\ncontroller = \"{}\"\nkey = \"{KEY}\"\nstatus_ms = 50\nseed = {}\n{}{spine_datapath}\
                         [[instance]]\npool = {POOL}\nrole = \"spine\"\npolicy = \"horus\"\n\
                         downstream = [{}]\nrack_workers = [{}]\n",
                        h.at(7100),
                        ctl_addr(&ctl_host),
                        3 + s,
                        fault(100 + s as u64),
                        leaves_list.join(", "),
                        vec![o.execs.to_string(); o.racks].join(", "),
                    ),
                )
            })
            .collect();
        let mut leaves = Vec::new();
        let mut workers = Vec::new();
        for (r, h) in rack_hosts.iter().enumerate() {
            let execs: Vec<String> = (0..o.execs)
                .map(|e| format!("\"{}\"", h.at(7201 + e as u16)))
                .collect();
            leaves.push(spawn_switch(
                h,
                format!(
                    "listen = \"{}\"\ncontroller = \"{}\"\nkey = \"{KEY}\"\nstatus_ms = 50\nseed = {}\n{}\
                     [[instance]]\npool = {POOL}\nrole = \"leaf\"\npolicy = \"horus\"\nrack = {r}\n\
                     upstream = [\"{}\"]\ndownstream = [{}]\nheartbeat_timeout_ms = 250\n",
                    h.at(7101),
                    ctl_addr(&ctl_host),
                    10 + r,
                    fault(200 + r as u64),
                    spine_hosts[r % o.spines].at(7100),
                    execs.join(", "),
                ),
            ));
            workers.push(
                (0..o.execs)
                    .map(|e| {
                        spawn_worker(
                            h,
                            format!(
                                "listen = [\"{}\"]\nfirst_id = {e}\nleaf = \"{}\"\npool = {POOL}\nheartbeat_ms = 50\nkey = \"{KEY}\"\n{}",
                                h.at(7201 + e as u16),
                                h.at(7101),
                                fault(300 + (r * 16 + e) as u64),
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
            spine_hosts,
            rack_hosts,
            execs: o.execs,
            spines,
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

    /// A cluster of one spine, started and waited for until the spine
    /// admits every rack.
    fn start_admitted(tag: &str, o: Opts) -> Option<Dc> {
        assert_eq!(o.spines, 1, "one spine's status");
        let racks = o.racks;
        let dc = Dc::start(tag, o)?;
        wait_for("spine status", Duration::from_secs(3), || {
            spine_admitted(&dc) == vec![true; racks]
        });
        Some(dc)
    }

    fn controller_config(&self) -> ControllerConfig {
        let mut t = format!(
            "listen = \"{}\"\nadmin = \"{}\"\ntoken = \"{TOKEN}\"\nkey = \"{KEY}\"\nstate = \"{}\"\n\
             daemon_timeout_ms = 300\ntick_ms = 20\nresend_ms = 60\n\
             [[pool]]\nid = {POOL}\nspines = [{}]\n",
            ctl_addr(&self.ctl_host),
            self.ctl_host.at(7080),
            self.state_file.display(),
            self.spine_list(),
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

    fn spine(&self) -> &Proc {
        &self.spines[0]
    }

    fn spine_list(&self) -> String {
        let v: Vec<String> = self
            .spine_hosts
            .iter()
            .map(|h| format!("\"{}\"", h.at(7100)))
            .collect();
        v.join(", ")
    }

    /// Runs a client in the controller's namespace against the spines
    /// (equal weights).
    fn client(
        &self,
        rate: f64,
        duration_ms: u64,
        seed: u64,
    ) -> JoinHandle<Result<ClientReport, netns::NetnsError>> {
        self.client_with(rate, duration_ms, seed, "")
    }

    /// [`Dc::client`] with more client TOML (`fault`, `[controller]`).
    fn client_with(
        &self,
        rate: f64,
        duration_ms: u64,
        seed: u64,
        extra: &str,
    ) -> JoinHandle<Result<ClientReport, netns::NetnsError>> {
        let targets: Vec<String> = self
            .spine_hosts
            .iter()
            .map(|h| format!("{{ addr = \"{}\" }}", h.at(7100)))
            .collect();
        let t = format!(
            "targets = [{}]\npool = {POOL}\napp_id = {seed}\nrate = {rate}\n\
             duration_ms = {duration_ms}\nservice = {{ kind = \"exp\", mean_us = 200 }}\n\
             timeout_ms = 400\nseed = {seed}\nbind = \"{}\"\n{extra}",
            targets.join(", "),
            self.ctl_host.at(0),
        );
        self.ctl_host.spawn(move || {
            let cfg = ClientConfig::from_toml(&t).unwrap();
            Client::bind(cfg).unwrap().run()
        })
    }

    fn spine_metric(&self, name: &str, labels: &str) -> u64 {
        self.spine().registry.value(name, labels).unwrap_or(0)
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

/// Tasks every worker agent ran (killed ones included: their registries
/// outlive them), from the workers' own counters.
fn executed(dc: &Dc) -> u64 {
    dc.workers
        .iter()
        .flatten()
        .map(|w| w.registry.sum("netsched_worker_tasks_total"))
        .sum()
}

/// Tasks every leaf dispatched to a worker, from the leaves' own counters.
fn dispatched(dc: &Dc) -> u64 {
    dc.leaves
        .iter()
        .map(|l| l.registry.sum("netsched_decisions_total"))
        .sum()
}

/// A run with no failure in it: the workers ran, and the leaves dispatched,
/// exactly the tasks the client submitted, each once.
fn check_exact(dc: &Dc, before: (u64, u64), r: &ClientReport) {
    check_accounting(r);
    assert_eq!(r.completed, r.submitted, "{}", r.summary());
    assert_eq!(executed(dc) - before.0, r.submitted, "executed by workers");
    assert_eq!(
        dispatched(dc) - before.1,
        r.submitted,
        "dispatched by leaves"
    );
}

/// A run with retries: its report adds up, every task completed, and the
/// copies it sent match what the cluster ran (`check_accounting`,
/// `check_copies`).
fn check_every_task_completed(dc: &Dc, r: &ClientReport) {
    check_accounting(r);
    assert_eq!(
        r.completed,
        r.submitted,
        "every task completed: {}",
        r.summary()
    );
    check_copies(dc, r);
}

/// A run with failures and client retries: every task ran at least once
/// and at most once per copy the client sent, by the workers' and leaves'
/// own counters.
fn check_copies(dc: &Dc, r: &ClientReport) {
    let (ran, sent) = (executed(dc), dispatched(dc));
    let copies = r.submitted + r.resubmitted;
    assert!(
        r.submitted <= ran && ran <= sent && sent <= copies,
        "submitted {} ≤ executed {ran} ≤ dispatched {sent} ≤ copies sent {copies}",
        r.submitted
    );
}

/// Issue 16 items 5 and 7: with client retries on, a worker, a leaf and a
/// spine killed during one run lose no task. What the client reports is
/// checked against the workers' and leaves' own counters: every task ran at
/// least once and at most once per copy the client sent.
#[test]
fn kills_with_retries_lose_no_task() {
    let Some(mut dc) = Dc::start(
        "kret",
        Opts {
            spines: 2,
            racks: 3,
            execs: 2,
            ..Default::default()
        },
    ) else {
        return;
    };
    wait_for("every rack admitted", Duration::from_secs(3), || {
        let t = dc.topology();
        (0..2).all(|s| {
            serde_json::from_value::<Vec<bool>>(t["pools"][0]["spines"][s]["admitted"].clone())
                .is_ok_and(|a| a.len() == 3)
        })
    });
    let follow = format!(
        "retries = 5\n[controller]\nadmin = \"{}\"\ntoken = \"{TOKEN}\"\npoll_ms = 50\n",
        dc.ctl_host.at(7080)
    );
    // 6 workers of Exp(200 µs) saturate at 30,000 tasks/s; run at ~7 %.
    let client = dc.client_with(2000.0, 3000, 21, &follow);
    std::thread::sleep(Duration::from_millis(500));
    dc.workers[0][1].kill();
    std::thread::sleep(Duration::from_millis(600));
    dc.leaves[2].kill();
    std::thread::sleep(Duration::from_millis(600));
    dc.spines[0].kill();
    let r = client.join().unwrap().unwrap();
    check_every_task_completed(&dc, &r);
    assert!(r.submitted > 4000, "{}", r.summary());
    // What survives serves a clean run exactly.
    let before = (executed(&dc), dispatched(&dc));
    let r2 = dc
        .client_with(1000.0, 500, 22, &follow)
        .join()
        .unwrap()
        .unwrap();
    check_exact(&dc, before, &r2);
}

#[test]
fn worker_and_leaf_failures_are_survived() {
    let Some(mut dc) = Dc::start_admitted("kill", Opts::default()) else {
        return;
    };
    // 6 workers of Exp(200 µs): 12,000 tasks/s saturate; run at ~25 %.
    // Retries on: a task in flight at the dead worker or leaf, or sent to
    // rack 2 before the controller noticed, is resubmitted.
    let client = dc.client_with(3000.0, 2400, 1, "retries = 5\n");
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
    check_every_task_completed(&dc, &r);
    let reg = dc.ctl.get().registry();
    assert!(
        reg.value("netsched_node_failures_total", "{kind=\"worker\"}")
            .unwrap()
            >= 1
    );
    assert!(
        reg.value("netsched_node_failures_total", "{kind=\"leaf\"}")
            .unwrap()
            >= 1
    );
    // What remains keeps serving: a second run completes everything, each
    // task run and dispatched exactly once by the workers' and leaves' counts.
    let before = (executed(&dc), dispatched(&dc));
    let r2 = dc.client(2000.0, 600, 2).join().unwrap().unwrap();
    check_exact(&dc, before, &r2);
    // The dead worker got no task in the second run.
    let done = |p: &Proc| p.registry.sum("netsched_worker_tasks_total");
    let before = done(&dc.workers[1][0]);
    let r3 = dc.client(1000.0, 300, 3).join().unwrap().unwrap();
    assert_eq!(r3.completed, r3.submitted, "{}", r3.summary());
    assert!(done(&dc.workers[1][0]) > before, "live racks serve");
}

/// An XDP spine follows the controller as the socket spine does: a rack
/// whose leaf died is dropped in the program's registers too (§A.3), and a
/// run without retries after the drop loses no task. Before, only the
/// sans-IO spine beside the program was told: the program kept the dead
/// rack among its racks, never reinstalled. (The spine's in-process thread
/// in a namespace also needed its MAC and neighbours read in that
/// namespace, not the host's.)
#[test]
fn an_xdp_spine_installs_the_racks_the_controller_admits_and_drops() {
    let clang = std::process::Command::new("clang")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if std::env::var_os("NETSCHED_REQUIRE_BPF").is_none() && !clang {
        netns::skip(
            "xdp spine",
            &"no BPF (clang missing when netsched-xdp was built)",
        );
        return;
    }
    let o = Opts {
        spine_xdp: true,
        ..Opts::default()
    };
    let Some(mut dc) = Dc::start_admitted("xspn", o) else {
        return;
    };
    let reinstalls = |dc: &Dc| dc.spine_metric("netsched_xdp_reinstalls_total", "");
    let before = (executed(&dc), dispatched(&dc));
    let r = dc.client(1000.0, 400, 1).join().unwrap().unwrap();
    check_exact(&dc, before, &r);
    let installed = reinstalls(&dc);
    dc.leaves[2].kill();
    wait_for(
        "rack 2 dropped at the spine",
        Duration::from_secs(2),
        || spine_admitted(&dc) == vec![true, true, false],
    );
    // The daemon installs a changed view between batches, within
    // milliseconds of applying it; give it up to a second, then let the
    // tasks tell whether it did.
    let t = Instant::now();
    while reinstalls(&dc) == installed && t.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(20));
    }
    // No retries: a task the program sent to the dead rack would be lost.
    let before = (executed(&dc), dispatched(&dc));
    let r = dc.client(1000.0, 600, 2).join().unwrap().unwrap();
    check_exact(&dc, before, &r);
    assert!(reinstalls(&dc) > installed, "the drop was installed");
}

#[test]
fn cut_link_and_controller_restart() {
    let Some(mut dc) = Dc::start_admitted("link", Opts::default()) else {
        return;
    };
    // Retries on: tasks sent to rack 1 while it is cut off time out and are
    // resubmitted elsewhere.
    let client = dc.client_with(3000.0, 2600, 4, "retries = 5\n");
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
    check_every_task_completed(&dc, &r);
    let reg = dc.ctl.get().registry();
    assert_eq!(
        reg.value("netsched_node_failures_total", "{kind=\"leaf\"}")
            .unwrap(),
        0
    );
}

#[test]
fn one_percent_loss_is_survived_and_idle_state_heals() {
    let Some(dc) = Dc::start_admitted(
        "loss",
        Opts {
            drop_rate: 0.01,
            loss_until_ms: 1800,
            ..Default::default()
        },
    ) else {
        return;
    };
    // Load ≈ 0.5 so racks keep turning busy and idle: many Idle Add/Remove.
    // 1 % loss on every link: client → spine and leaf → spine (at the
    // spine), spine → leaf and worker → leaf (at the leaves), leaf → worker
    // (at the worker agents), spine → client (at the client).
    let r = dc
        .client_with(6000.0, 1800, 5, "fault = { drop_rate = 0.01, seed = 55 }\n")
        .join()
        .unwrap()
        .unwrap();
    check_accounting(&r);
    let by_type = |regs: &mut dyn Iterator<Item = &Proc>, t: &str| -> u64 {
        regs.map(|p| {
            p.registry
                .value("netsched_fault_drops_total", &format!("{{type=\"{t}\"}}"))
                .unwrap_or(0)
        })
        .sum()
    };
    let at_spine = |t: &str| by_type(&mut dc.spines.iter(), t);
    let at_leaves = |t: &str| by_type(&mut dc.leaves.iter(), t);
    let at_workers: u64 = dc
        .workers
        .iter()
        .flatten()
        .map(|w| w.registry.sum("netsched_fault_drops_total"))
        .sum();
    let worker_tasks: u64 = dc
        .workers
        .iter()
        .flatten()
        .map(|w| {
            w.registry
                .value(
                    "netsched_fault_drops_total",
                    "{executor=\"0\",type=\"task_first\"}",
                )
                .unwrap_or(0)
                + w.registry
                    .value(
                        "netsched_fault_drops_total",
                        "{executor=\"1\",type=\"task_first\"}",
                    )
                    .unwrap_or(0)
        })
        .sum();
    let report = format!(
        "spine: task_first {} idle_add {} idle_remove {} load_update {}; leaves: task_first {} reply {} \
         keep_alive {}; workers: {at_workers} ({worker_tasks} tasks); client: {} replies; {}",
        at_spine("task_first"),
        at_spine("idle_add"),
        at_spine("idle_remove"),
        at_spine("load_update"),
        at_leaves("task_first"),
        at_leaves("reply"),
        at_leaves("keep_alive"),
        r.fault_dropped,
        r.summary()
    );
    eprintln!("losses by link and type: {report}");
    // Loss happened on every link ...
    assert!(at_spine("task_first") > 0, "client → spine: {report}");
    assert!(at_leaves("task_first") > 0, "spine → leaf: {report}");
    assert!(at_leaves("reply") > 0, "worker → leaf: {report}");
    assert!(worker_tasks > 0, "leaf → worker: {report}");
    assert!(r.fault_dropped > 0, "spine → client: {report}");
    // ... and Idle Add/Remove notices were among the lost datagrams, so the
    // healing checked below is of real losses (§A.3).
    assert!(
        at_spine("idle_add") + at_spine("idle_remove") > 0,
        "leaf → spine idle notices: {report}"
    );
    // Lost tasks and replies time out; none goes missing. Six lossy hops
    // per task: 0.99^6 ≈ 94 % complete.
    assert!(
        r.completed as f64 >= 0.9 * r.submitted as f64,
        "{}",
        r.summary()
    );
    assert!(r.timed_out > 0, "lost tasks time out: {}", r.summary());
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
    let Some(mut dc) = Dc::start_admitted(
        "admn",
        Opts {
            racks: 2,
            execs: 1,
            ..Default::default()
        },
    ) else {
        return;
    };
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
            "listen = [\"{}\"]\nfirst_id = 1\nleaf = \"{}\"\npool = {POOL}\nheartbeat_ms = 50\nkey = \"{KEY}\"\n",
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

/// Horus §A.3 "Switch Failures" with §3.2's weighted spine choice: a client
/// that follows the controller's `GET /v1/topology` stops sending to a
/// spine once the controller finds it dead, while the controller relinks
/// that spine's racks to the survivor; the client keeps being served and
/// accounts for every task.
#[test]
fn a_killed_spine_is_dropped_by_clients_following_the_controller() {
    let Some(mut dc) = Dc::start(
        "spnk",
        Opts {
            spines: 2,
            racks: 2,
            execs: 2,
            ..Default::default()
        },
    ) else {
        return;
    };
    let admitted = |dc: &Dc, s: usize| -> Vec<bool> {
        let t = dc.topology();
        serde_json::from_value(t["pools"][0]["spines"][s]["admitted"].clone()).unwrap_or_default()
    };
    wait_for("each spine admits its rack", Duration::from_secs(3), || {
        admitted(&dc, 0) == vec![true, false] && admitted(&dc, 1) == vec![false, true]
    });
    let follow = format!(
        "[controller]\nadmin = \"{}\"\ntoken = \"{TOKEN}\"\npoll_ms = 50\n",
        dc.ctl_host.at(7080)
    );
    let decided = |p: &Proc| {
        ["idle", "sampled", "other"]
            .iter()
            .map(|d| {
                p.registry
                    .value("netsched_decisions_total", &format!("{{decision=\"{d}\"}}"))
                    .unwrap_or(0)
            })
            .sum::<u64>()
    };
    // 4 workers of Exp(200 µs) saturate at 20,000 tasks/s; run at ~10 %.
    let client = dc.client_with(2000.0, 2500, 11, &follow);
    std::thread::sleep(Duration::from_millis(700));
    assert!(decided(&dc.spines[0]) > 100, "both spines serve at first");
    dc.spines[0].kill();
    let killed_at = Instant::now();
    // The controller relinks rack 0 to spine 1 and weights it 1.0.
    wait_for("rack 0 relinked to spine 1", Duration::from_secs(2), || {
        admitted(&dc, 1) == vec![true, true]
    });
    let relinked_after = killed_at.elapsed();
    let survivor_before = decided(&dc.spines[1]);
    let r = client.join().unwrap().unwrap();
    check_accounting(&r);
    assert!(r.topology_updates >= 1, "{}", r.summary());
    // Only tasks sent to spine 0 between its death and the client's next
    // poll after the controller noticed (≈ 300 ms + 50 ms of half the
    // load) may time out; the rest of the 2.5 s run is served.
    assert!(
        r.completed as f64 >= 0.8 * r.submitted as f64,
        "relinked after {relinked_after:?}: {}",
        r.summary()
    );
    assert!(
        decided(&dc.spines[1]) > survivor_before + 500,
        "the surviving spine takes the whole load"
    );
    // A new client learns the spines before its first task: none is lost,
    // by the workers' and leaves' own counts.
    let before = (executed(&dc), dispatched(&dc));
    let r2 = dc
        .client_with(2000.0, 600, 12, &follow)
        .join()
        .unwrap()
        .unwrap();
    check_exact(&dc, before, &r2);
    // Both racks serve through the survivor.
    let done = |rack: usize| -> u64 {
        dc.workers[rack]
            .iter()
            .map(|w| w.registry.sum("netsched_worker_tasks_total"))
            .sum()
    };
    let before = (done(0), done(1));
    let r3 = dc
        .client_with(2000.0, 400, 13, &follow)
        .join()
        .unwrap()
        .unwrap();
    assert_eq!(r3.completed, r3.submitted, "{}", r3.summary());
    assert!(done(0) > before.0 && done(1) > before.1, "both racks serve");
    // Without the controller's view, a client with the fixed targets keeps
    // sending half its tasks to the dead spine: they time out.
    let fixed = dc.client(2000.0, 300, 14).join().unwrap().unwrap();
    check_accounting(&fixed);
    assert!(
        fixed.timed_out as f64 >= 0.3 * fixed.submitted as f64,
        "{}",
        fixed.summary()
    );
}
