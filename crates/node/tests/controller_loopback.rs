//! The controller on loopback (runs where network namespaces are not
//! permitted): configuration pushes reach the daemons, a dead leaf is dropped
//! at the spine, the admin API wants its token, and control datagrams from
//! anyone but the controller are rejected.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::{sock, task_datagram};
use netsched_node::config::{Policy, PoolConfig, Role};
use netsched_node::controller::proto::{ControlMsg, InstanceDesired, Sealer};
use netsched_node::controller::{http, Controller, ControllerConfig};
use netsched_node::metrics::Registry;
use netsched_node::secret::ClusterKey;
use netsched_node::{Client, ClientConfig, SwitchConfig, SwitchDaemon, Worker, WorkerConfig};

const TOKEN: &str = "loopback-token";
/// The cluster key every controller and daemon of these tests shares.
const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

struct Daemon {
    stop: Arc<AtomicBool>,
    reg: Arc<Registry>,
    h: Option<JoinHandle<()>>,
}

impl Daemon {
    fn start(cfg: &str, s: UdpSocket) -> Daemon {
        let cfg = SwitchConfig::from_toml(cfg).unwrap();
        let mut d = SwitchDaemon::new(&cfg, s).unwrap();
        let reg = d.registry();
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let h = std::thread::spawn(move || {
            d.run(&st).unwrap();
        });
        Daemon {
            stop,
            reg,
            h: Some(h),
        }
    }
    fn kill(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.h.take() {
            h.join().unwrap();
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
    }
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(3), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `n` bound loopback sockets and their addresses.
fn sockets(n: usize) -> (Vec<UdpSocket>, Vec<SocketAddr>) {
    let s: Vec<UdpSocket> = (0..n).map(|_| sock()).collect();
    let a = s.iter().map(|s| s.local_addr().unwrap()).collect();
    (s, a)
}

/// `"a", "b"`: addresses as the elements of a TOML array.
fn quoted(addrs: &[SocketAddr]) -> String {
    addrs
        .iter()
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A daemon config's head: where it listens, and its controller and key.
fn managed(listen: SocketAddr, ctl: SocketAddr) -> String {
    format!("listen = \"{listen}\"\ncontroller = \"{ctl}\"\nkey = \"{KEY}\"\nstatus_ms = 30\n")
}

/// A Horus spine instance of pool 1 over `leaves`.
fn spine_instance(leaves: &[SocketAddr]) -> String {
    format!(
        "[[instance]]\npool = 1\nrole = \"spine\"\ndownstream = [{}]\n",
        quoted(leaves)
    )
}

/// The Horus leaf instance of rack `rack` of pool 1 under `spine`; `extra`
/// is more instance TOML.
fn leaf_instance(rack: usize, spine: SocketAddr, workers: &[SocketAddr], extra: &str) -> String {
    format!(
        "[[instance]]\npool = 1\nrole = \"leaf\"\nrack = {rack}\nupstream = [\"{spine}\"]\n\
         downstream = [{}]\n{extra}",
        quoted(workers)
    )
}

/// A worker agent of one executor at `listen` (socket `s`) heartbeating to
/// `leaf` every 40 ms; `extra` is more worker TOML.
fn worker(
    listen: SocketAddr,
    leaf: SocketAddr,
    extra: &str,
    s: UdpSocket,
    stop: &Arc<AtomicBool>,
) -> Worker {
    let cfg = WorkerConfig::from_toml(&format!(
        "listen = [\"{listen}\"]\nleaf = \"{leaf}\"\npool = 1\nheartbeat_ms = 40\nkey = \"{KEY}\"\n{extra}"
    ))
    .unwrap();
    Worker::start(&cfg, vec![s], stop.clone()).unwrap()
}

/// Worker agent r at `execs[r]` (socket r) under leaf r.
fn worker_per_rack(
    sockets: Vec<UdpSocket>,
    execs: &[SocketAddr],
    leaves: &[SocketAddr],
    stop: &Arc<AtomicBool>,
) -> Vec<Worker> {
    sockets
        .into_iter()
        .enumerate()
        .map(|(r, s)| worker(execs[r], leaves[r], "", s, stop))
        .collect()
}

/// A controller of pool 1 with `spines` and the racks (leaf, workers),
/// daemons timed out after 200 ms.
fn controller(
    spines: &[SocketAddr],
    racks: &[(SocketAddr, &[SocketAddr])],
    stop: &Arc<AtomicBool>,
) -> Controller {
    let mut toml = format!(
        "listen = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\ntoken = \"{TOKEN}\"\nkey = \"{KEY}\"\ndaemon_timeout_ms = 200\n\
         tick_ms = 10\nresend_ms = 40\n[[pool]]\nid = 1\nspines = [{}]\n",
        quoted(spines)
    );
    for (leaf, workers) in racks {
        toml += &format!(
            "[[pool.rack]]\nleaf = \"{leaf}\"\nworkers = [{}]\n",
            quoted(workers)
        );
    }
    let cfg = ControllerConfig::from_toml(&toml).unwrap();
    Controller::start(&cfg, stop.clone()).unwrap()
}

/// Which racks of pool 1 spine `spine` admits, in the controller's view.
fn admitted(c: &Controller, spine: usize) -> Vec<bool> {
    serde_json::from_value(c.topology_json()["pools"][0]["spines"][spine]["admitted"].clone())
        .unwrap_or_default()
}

/// Stops the controller, then the workers.
fn stop(c: Controller, cstop: &AtomicBool, workers: Vec<Worker>, wstop: &AtomicBool) {
    cstop.store(true, Ordering::Relaxed);
    c.join();
    wstop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join();
    }
}

#[test]
fn controller_drops_a_dead_leaf_and_guards_its_api() {
    let spine_s = sock();
    let spine = spine_s.local_addr().unwrap();
    let (leaf_s, leaves) = sockets(2);
    let (exec_s, execs) = sockets(2);
    let cstop = Arc::new(AtomicBool::new(false));
    let racks = [(leaves[0], &execs[0..1]), (leaves[1], &execs[1..2])];
    let c = controller(&[spine], &racks, &cstop);
    let (ctl, admin) = (c.control_addr, c.admin_addr);
    let sp = Daemon::start(&(managed(spine, ctl) + &spine_instance(&leaves)), spine_s);
    let mut ls = Vec::new();
    for (r, s) in leaf_s.into_iter().enumerate() {
        let cfg = managed(leaves[r], ctl)
            + &leaf_instance(r, spine, &execs[r..=r], "heartbeat_timeout_ms = 200\n");
        ls.push(Daemon::start(&cfg, s));
    }
    let wstop = Arc::new(AtomicBool::new(false));
    let workers = worker_per_rack(exec_s, &execs, &leaves, &wstop);
    wait_for("both racks reported", || {
        admitted(&c, 0) == vec![true, true]
    });

    // The admin API: 401 without or with a wrong token, 200 with it.
    assert_eq!(
        http(admin, "GET", "/v1/topology", None, None).unwrap().0,
        401
    );
    assert_eq!(
        http(admin, "GET", "/v1/topology", Some("loopback-tokeN"), None)
            .unwrap()
            .0,
        401
    );
    let (code, body) = http(admin, "GET", "/v1/topology", Some(TOKEN), None).unwrap();
    assert_eq!(code, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["pools"][0]["racks"].as_array().unwrap().len(), 2);
    assert_eq!(v["pools"][0]["spines"][0]["weight"], 1.0);
    assert_eq!(
        http(admin, "GET", "/nope", Some(TOKEN), None).unwrap().0,
        404
    );
    let reg = c.registry();
    assert_eq!(
        reg.value("netsched_controller_admin_requests_total", "{code=\"401\"}"),
        Some(2)
    );

    // A configure from a stranger is rejected and changes nothing, even
    // sealed under the right key.
    let evil = sock();
    let forged = ControlMsg::Configure(InstanceDesired {
        pool: 1,
        role: None,
        downstream: leaves.clone(),
        enabled: vec![false, false],
        upstream: None,
        rack_workers: Some(vec![1, 1]),
    });
    let mut evil_sealer = Sealer::new(
        ClusterKey::from_hex(KEY).unwrap(),
        evil.local_addr().unwrap(),
    );
    evil.send_to(&evil_sealer.seal(&forged, spine, 0), spine)
        .unwrap();
    wait_for("forged configure counted", || {
        sp.reg.value(
            "netsched_control_rejected_total",
            "{reason=\"unregistered_source\"}",
        ) == Some(1)
    });
    assert_eq!(admitted(&c, 0), vec![true, true]);

    // Kill leaf 1: the controller drops rack 1 at the spine, and every task
    // then goes to rack 0.
    ls[1].kill();
    wait_for("rack 1 dropped", || admitted(&c, 0) == vec![true, false]);
    assert!(reg.value("netsched_node_failures_total", "{kind=\"leaf\"}") >= Some(1));
    let ccfg = ClientConfig::from_toml(&format!(
        "targets = [{{ addr = \"{spine}\" }}]\npool = 1\napp_id = 9\nrate = 2000\nduration_ms = 300\n\
         service = {{ kind = \"exp\", mean_us = 50 }}\ntimeout_ms = 300\n"
    ))
    .unwrap();
    let r = Client::bind(ccfg).unwrap().run();
    assert_eq!(r.completed, r.submitted, "{}", r.summary());
    assert!(r.submitted > 300);

    stop(c, &cstop, workers, &wstop);
}

#[test]
fn leaves_of_a_dead_spine_are_relinked_to_a_live_one() {
    let (spine_s, spines) = sockets(2);
    let (leaf_s, leaves) = sockets(2);
    let (exec_s, execs) = sockets(2);
    let cstop = Arc::new(AtomicBool::new(false));
    let racks = [(leaves[0], &execs[0..1]), (leaves[1], &execs[1..2])];
    let c = controller(&spines, &racks, &cstop);
    let ctl = c.control_addr;
    // Both spines list both racks (pool-wide rack ids); the controller admits
    // rack r only at spine r mod 2.
    let mut sp: Vec<Daemon> = spine_s
        .into_iter()
        .enumerate()
        .map(|(k, s)| Daemon::start(&(managed(spines[k], ctl) + &spine_instance(&leaves)), s))
        .collect();
    let mut ls = Vec::new();
    for (r, s) in leaf_s.into_iter().enumerate() {
        let cfg = managed(leaves[r], ctl) + &leaf_instance(r, spines[r], &execs[r..=r], "");
        ls.push(Daemon::start(&cfg, s));
    }
    let wstop = Arc::new(AtomicBool::new(false));
    let workers = worker_per_rack(exec_s, &execs, &leaves, &wstop);
    // Rack r is linked to spine r: each spine schedules over its own rack.
    wait_for("racks split over the spines", || {
        admitted(&c, 0) == vec![true, false] && admitted(&c, 1) == vec![false, true]
    });
    let t = c.topology_json();
    assert_eq!(t["pools"][0]["spines"][0]["weight"], 0.5);
    // Spine 0 fails: rack 0's leaf is relinked to spine 1 (§A.3), which
    // admits it; rack 0 resyncs its idle state with its new spine.
    sp[0].kill();
    wait_for("rack 0 relinked to spine 1", || {
        let t = c.topology_json();
        t["pools"][0]["racks"][0]["linked_spine"] == 1 && admitted(&c, 1) == vec![true, true]
    });
    assert_eq!(c.topology_json()["pools"][0]["spines"][1]["weight"], 1.0);
    wait_for("rack 0 resynced", || {
        ls[0].reg.value("netsched_control_resyncs_total", "") >= Some(1)
    });
    // Clients that follow the weights now send everything to spine 1, and
    // both racks serve.
    let ccfg = ClientConfig::from_toml(&format!(
        "targets = [{{ addr = \"{}\" }}]\npool = 1\napp_id = 9\nrate = 3000\nduration_ms = 300\n\
         service = {{ kind = \"exp\", mean_us = 200 }}\ntimeout_ms = 300\n",
        spines[1]
    ))
    .unwrap();
    let r = Client::bind(ccfg).unwrap().run();
    assert_eq!(r.completed, r.submitted, "{}", r.summary());
    let served = |r: usize| workers[r].registry().sum("netsched_worker_tasks_total");
    assert!(
        served(0) > 0 && served(1) > 0,
        "{} {}",
        served(0),
        served(1)
    );
    stop(c, &cstop, workers, &wstop);
}

#[test]
fn racks_are_added_and_removed_through_the_admin_api() {
    let spine_s = sock();
    let spine = spine_s.local_addr().unwrap();
    let (leaf_s, leaves) = sockets(2);
    let (exec_s, execs) = sockets(2);
    let cstop = Arc::new(AtomicBool::new(false));
    let c = controller(&[spine], &[(leaves[0], &execs[0..1])], &cstop);
    let (ctl, admin) = (c.control_addr, c.admin_addr);
    let _sp = Daemon::start(
        &(managed(spine, ctl) + &spine_instance(&leaves[..1])),
        spine_s,
    );
    let leaf_cfg = |r: usize| {
        managed(leaves[r], ctl)
            + &leaf_instance(r, spine, &execs[r..=r], "heartbeat_timeout_ms = 200\n")
    };
    let mut ls = leaf_s.into_iter();
    let _leaf0 = Daemon::start(&leaf_cfg(0), ls.next().unwrap());
    let wstop = Arc::new(AtomicBool::new(false));
    let mut es = exec_s.into_iter();
    let w0 = worker(execs[0], leaves[0], "", es.next().unwrap(), &wstop);
    wait_for("rack 0 reported", || admitted(&c, 0) == vec![true]);
    // A new rack: its leaf and worker start, the admin API adds it, and the
    // spine's downstream grows to it (rack id 1).
    let _leaf1 = Daemon::start(&leaf_cfg(1), ls.next().unwrap());
    let w1 = worker(execs[1], leaves[1], "", es.next().unwrap(), &wstop);
    let (code, body) = http(
        admin,
        "POST",
        "/v1/racks",
        Some(TOKEN),
        Some(&format!(
            "{{\"pool\": 1, \"leaf\": \"{}\", \"workers\": [\"{}\"]}}",
            leaves[1], execs[1]
        )),
    )
    .unwrap();
    assert_eq!(code, 201, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["rack"], 1);
    let rack_id = v["id"].as_u64().unwrap();
    wait_for("rack 1 admitted at the spine", || {
        admitted(&c, 0) == vec![true, true]
    });
    let run = |app: u32| {
        let ccfg = ClientConfig::from_toml(&format!(
            "targets = [{{ addr = \"{spine}\" }}]\npool = 1\napp_id = {app}\nrate = 3000\n\
             duration_ms = 300\nservice = {{ kind = \"exp\", mean_us = 200 }}\ntimeout_ms = 300\n"
        ))
        .unwrap();
        let r = Client::bind(ccfg).unwrap().run();
        assert_eq!(r.completed, r.submitted, "{}", r.summary());
    };
    run(1);
    let served1 = w1.registry().sum("netsched_worker_tasks_total");
    assert!(served1 > 0, "the added rack serves");
    // Removing it: the spine stops using it.
    let (code, body) = http(
        admin,
        "DELETE",
        &format!("/v1/racks/{rack_id}"),
        Some(TOKEN),
        None,
    )
    .unwrap();
    assert_eq!(code, 200, "{body}");
    wait_for("rack 1 dropped", || admitted(&c, 0) == vec![true, false]);
    run(2);
    assert_eq!(w1.registry().sum("netsched_worker_tasks_total"), served1);
    assert!(w0.registry().sum("netsched_worker_tasks_total") > 0);
    assert_eq!(
        http(
            admin,
            "DELETE",
            &format!("/v1/racks/{rack_id}"),
            Some(TOKEN),
            None
        )
        .unwrap()
        .0,
        404,
        "already removed"
    );
    stop(c, &cstop, vec![w0, w1], &wstop);
}

// ---- configuration pushes into baseline data planes ----

use netsched_node::controller::proto::RoleName;
use netsched_proto::task_id;

/// Task datagrams waiting at `s` (none arrive later than `ms` after the last).
fn drain(s: &UdpSocket, ms: u64) -> usize {
    s.set_read_timeout(Some(Duration::from_millis(ms))).unwrap();
    let mut b = [0u8; 2048];
    let mut n = 0;
    while s.recv_from(&mut b).is_ok() {
        n += 1;
    }
    n
}

/// `msg` sealed by the controller at `ctl` for the daemon `d`, as its next
/// datagram (a fresh sender each time, at a later epoch than the last).
fn sealed(msg: &ControlMsg, ctl: SocketAddr, d: &SwitchDaemon) -> Vec<u8> {
    static EPOCH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let key = ClusterKey::from_hex(KEY).unwrap();
    Sealer::with_epoch(key, ctl, EPOCH.fetch_add(1, Ordering::Relaxed)).seal(
        msg,
        d.local_addr(),
        d.control_epoch().unwrap(),
    )
}

fn daemon_with_controller(toml: &str, ctl: SocketAddr) -> SwitchDaemon {
    let cfg = SwitchConfig::from_toml(&format!(
        "listen = \"127.0.0.1:0\"\ncontroller = \"{ctl}\"\nkey = \"{KEY}\"\n{toml}"
    ))
    .unwrap();
    SwitchDaemon::new(&cfg, sock()).unwrap()
}

/// `jsq` and `pow2-instant` choose over the exact count of tasks outstanding
/// at each node; a worker the controller adds at runtime must be counted
/// too, or it looks empty forever and takes every task.
#[test]
fn zero_delay_baselines_count_tasks_at_a_runtime_added_worker() {
    for policy in ["jsq", "pow2-instant"] {
        let ctl_s = sock();
        let ctl = ctl_s.local_addr().unwrap();
        let ws = [sock(), sock()];
        let wa: Vec<SocketAddr> = ws.iter().map(|s| s.local_addr().unwrap()).collect();
        let mut d = daemon_with_controller(
            &format!(
                "[[instance]]\npool = 1\nrole = \"leaf\"\npolicy = \"{policy}\"\ndownstream = [\"{}\"]\n",
                wa[0]
            ),
            ctl,
        );
        // The controller adds worker 1 (no heartbeats: trusted at once).
        let push = ControlMsg::Configure(InstanceDesired {
            pool: 1,
            role: Some(RoleName::Leaf),
            downstream: wa.clone(),
            enabled: vec![true, true],
            upstream: None,
            rack_workers: None,
        });
        d.on_datagram(&sealed(&push, ctl, &d), ctl, 1);
        assert_eq!(
            d.registry().value("netsched_live_nodes", "{pool=\"1\"}"),
            Some(2),
            "{policy}"
        );
        let client = sock().local_addr().unwrap();
        for seq in 0..10 {
            d.on_datagram(
                &task_datagram(1, task_id::new(5, seq)),
                client,
                2 + seq as u64,
            );
        }
        // No replies: the exact queue view alternates between the two.
        assert_eq!([drain(&ws[0], 100), drain(&ws[1], 100)], [5, 5], "{policy}");
    }
}

/// A baseline spine (random, round-robin, JSQ, JIQ, power-of-2, idle-only,
/// central queue) stops sending to a rack the controller drops (§A.3).
#[test]
fn baseline_spines_honour_rack_drops() {
    for policy in common::flat_baselines() {
        let name = policy.name();
        let ctl_s = sock();
        let ctl = ctl_s.local_addr().unwrap();
        let leaves = [sock(), sock()];
        let la: Vec<SocketAddr> = leaves.iter().map(|s| s.local_addr().unwrap()).collect();
        let mut d = daemon_with_controller(
            &format!(
                "[[instance]]\npool = 1\nrole = \"spine\"\npolicy = \"{name}\"\ndownstream = [\"{}\", \"{}\"]\n",
                la[0], la[1]
            ),
            ctl,
        );
        // §A.3: rack 1's leaf failed; rack 0 stays.
        let push = ControlMsg::Configure(InstanceDesired {
            pool: 1,
            role: Some(RoleName::Spine),
            downstream: la.clone(),
            enabled: vec![true, false],
            upstream: None,
            rack_workers: Some(vec![1, 1]),
        });
        d.on_datagram(&sealed(&push, ctl, &d), ctl, 1);
        let reg = d.registry();
        assert_eq!(
            reg.value("netsched_live_nodes", "{pool=\"1\"}"),
            Some(1),
            "{name}"
        );
        let client = sock().local_addr().unwrap();
        // The central queue holds one task per idle rack and queues the rest
        // (no replies here); the others dispatch each at once.
        let tasks = 16;
        for seq in 0..tasks {
            d.on_datagram(
                &task_datagram(1, task_id::new(5, seq)),
                client,
                2 + seq as u64,
            );
        }
        let (at0, at1) = (drain(&leaves[0], 100), drain(&leaves[1], 100));
        assert_eq!(at1, 0, "{name}: a task went to the dropped rack");
        // The queueing baselines send a live rack at most their bound of
        // unanswered tasks (the central queue 1, R2P2's JBSQ its default
        // bound) and hold the rest; the others send every task at once.
        let sent = match policy {
            Policy::Central => 1,
            Policy::R2p2 => PoolConfig::new(1, Role::Spine, policy, vec![]).jbsq_bound as usize,
            _ => tasks as usize,
        };
        assert_eq!(at0, sent, "{name}");
        assert_eq!(
            reg.value("netsched_queued_total", "").unwrap_or(0),
            (tasks as usize - sent) as u64,
            "{name}"
        );
    }
}

/// One daemon is both the spine and the leaf of a pool (Horus §3.5 in
/// software). The controller tells its two instances apart by role: it
/// installs the rack's 1/w at the spine from the leaf's report, and a worker
/// removed through the admin API leaves the leaf and the spine's 1/w.
#[test]
fn the_controller_manages_a_daemon_that_is_spine_and_leaf_of_a_pool() {
    let ds = sock();
    let d = ds.local_addr().unwrap();
    let (exec_s, execs) = sockets(2);
    let cstop = Arc::new(AtomicBool::new(false));
    let c = controller(&[d], &[(d, &execs)], &cstop);
    let (ctl, admin) = (c.control_addr, c.admin_addr);
    let cfg = managed(d, ctl)
        + &spine_instance(&[d])
        + &leaf_instance(0, d, &execs, "heartbeat_timeout_ms = 200\n");
    let _daemon = Daemon::start(&cfg, ds);
    let wstop = Arc::new(AtomicBool::new(false));
    let workers: Vec<Worker> = exec_s
        .into_iter()
        .enumerate()
        .map(|(j, s)| worker(execs[j], d, &format!("first_id = {j}\n"), s, &wstop))
        .collect();
    let spine_view = |c: &Controller, field: &str| -> Vec<serde_json::Value> {
        serde_json::from_value(c.topology_json()["pools"][0]["spines"][0][field].clone())
            .unwrap_or_default()
    };
    // The daemon starts with 1/w = 1/1; the leaf reports two live workers.
    wait_for("the spine's 1/w from the leaf's report", || {
        spine_view(&c, "admitted") == vec![serde_json::json!(true)]
            && spine_view(&c, "rack_workers") == vec![serde_json::json!(2)]
    });
    let topo = c.topology_json();
    let w1_id = topo["pools"][0]["racks"][0]["workers"][1]["id"]
        .as_u64()
        .unwrap();
    let (code, body) = http(
        admin,
        "DELETE",
        &format!("/v1/workers/{w1_id}"),
        Some(TOKEN),
        None,
    )
    .unwrap();
    assert_eq!(code, 200, "{body}");
    wait_for("worker 1 out at the leaf, 1/w = 1/1 at the spine", || {
        let t = c.topology_json();
        t["pools"][0]["racks"][0]["live_workers"] == 1
            && spine_view(&c, "rack_workers") == vec![serde_json::json!(1)]
    });
    let ccfg = ClientConfig::from_toml(&format!(
        "targets = [{{ addr = \"{d}\" }}]\npool = 1\napp_id = 3\nrate = 2000\n\
         duration_ms = 300\nservice = {{ kind = \"fixed\", value_us = 100 }}\ntimeout_ms = 500\n"
    ))
    .unwrap();
    let served1 = workers[1].registry().sum("netsched_worker_tasks_total");
    let r = Client::bind(ccfg).unwrap().run();
    assert!(r.submitted > 100, "{}", r.summary());
    assert_eq!(r.completed, r.submitted, "{}", r.summary());
    assert_eq!(
        workers[1].registry().sum("netsched_worker_tasks_total"),
        served1,
        "the removed worker got tasks"
    );
    stop(c, &cstop, workers, &wstop);
}

/// Issue 16 item 2: a control datagram recorded on the wire and sent again
/// (with the controller's source address) is refused, however authentic: the
/// replay of an old "drop rack 1" does not undo the newer "admit it".
#[test]
fn a_replayed_configure_is_refused() {
    let ctl = sock().local_addr().unwrap();
    let leaves = [sock(), sock()];
    let la: Vec<SocketAddr> = leaves.iter().map(|s| s.local_addr().unwrap()).collect();
    let mut d = daemon_with_controller(
        &format!(
            "[[instance]]\npool = 1\nrole = \"spine\"\npolicy = \"horus\"\ndownstream = [\"{}\", \"{}\"]\n",
            la[0], la[1]
        ),
        ctl,
    );
    let mut controller = Sealer::new(ClusterKey::from_hex(KEY).unwrap(), ctl);
    let push = |enabled: Vec<bool>| {
        ControlMsg::Configure(InstanceDesired {
            pool: 1,
            role: Some(RoleName::Spine),
            downstream: la.clone(),
            enabled,
            upstream: None,
            rack_workers: Some(vec![1, 1]),
        })
    };
    let (me, epoch) = (d.local_addr(), d.control_epoch().unwrap());
    let drop_rack1 = controller.seal(&push(vec![true, false]), me, epoch);
    let admit_both = controller.seal(&push(vec![true, true]), me, epoch);
    let reg = d.registry();
    let live = || reg.value("netsched_live_nodes", "{pool=\"1\"}");
    d.on_datagram(&drop_rack1, ctl, 1);
    assert_eq!(live(), Some(1));
    d.on_datagram(&admit_both, ctl, 2);
    assert_eq!(live(), Some(2));
    // The replays, of the older and of the latest datagram.
    d.on_datagram(&drop_rack1, ctl, 3);
    d.on_datagram(&admit_both, ctl, 4);
    assert_eq!(live(), Some(2), "a replay changed the spine");
    assert_eq!(
        reg.value("netsched_control_rejected_total", "{reason=\"replayed\"}"),
        Some(2)
    );
    assert_eq!(reg.value("netsched_control_rx_total", ""), Some(2));
}
