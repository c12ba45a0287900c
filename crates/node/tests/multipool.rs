//! One daemon, several instances: datagrams are routed by pool id, and each
//! instance keeps its own role and state.

mod common;

use std::net::UdpSocket;
use std::time::Duration;

use common::{sock, switch_config};
use netsched_node::config::{Policy, PoolConfig, Role};
use netsched_node::{SwitchConfig, SwitchDaemon};
use netsched_proto::{decode, task_id, HorusBody, HorusMessage, Message};

fn task(pool: u16, seq: u32) -> Vec<u8> {
    common::task_message(pool, task_id::new(8, seq), 0)
        .to_vec()
        .unwrap()
}

fn recv(s: &UdpSocket) -> Option<HorusMessage<'static>> {
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut b = [0u8; 2048];
    let (n, _) = s.recv_from(&mut b).ok()?;
    let v: &'static [u8] = Box::leak(b[..n].to_vec().into_boxed_slice());
    match decode(v).unwrap() {
        Message::Horus(m) => Some(m),
        _ => None,
    }
}

#[test]
fn instances_are_selected_by_pool() {
    let rack = sock();
    let worker = sock();
    let spine_up = sock();
    let cfg = switch_config(vec![
        PoolConfig {
            rack_workers: vec![4],
            ..PoolConfig::new(
                10,
                Role::Spine,
                Policy::Horus,
                vec![rack.local_addr().unwrap()],
            )
        },
        PoolConfig {
            upstream: vec![spine_up.local_addr().unwrap()],
            rack: 3,
            ..PoolConfig::new(
                20,
                Role::Leaf,
                Policy::Horus,
                vec![worker.local_addr().unwrap()],
            )
        },
    ]);
    let mut d = SwitchDaemon::new(&cfg, sock()).unwrap();
    let client = sock().local_addr().unwrap();
    d.on_datagram(&task(10, 1), client, 1);
    d.on_datagram(&task(20, 2), client, 2);
    let at_rack = recv(&rack).expect("pool 10 task at the rack");
    assert_eq!(at_rack.header.pool_id, 10);
    assert_eq!(at_rack.task_id(), Some(task_id::new(8, 1)));
    let at_worker = recv(&worker).expect("pool 20 task at the worker");
    assert_eq!(at_worker.header.pool_id, 20);
    assert_eq!(at_worker.task_id(), Some(task_id::new(8, 2)));
    // The leaf's only worker is now busy: it tells its spine, as rack 3.
    let notice = recv(&spine_up).expect("idleRemove to the linked spine");
    assert_eq!(notice.body, HorusBody::IdleRemove);
    assert_eq!(notice.header.src_id, 3);
    assert_eq!(notice.header.pool_id, 20);
}

// ---- end to end over loopback: real workers, clients and daemon threads ----

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use netsched_config::workload::ServiceDist;
use netsched_node::config::{Target, WireFamily};
use netsched_node::metrics::Registry;
use netsched_node::{Client, ClientConfig, ClientReport, Worker, WorkerConfig};

fn list(v: &[SocketAddr]) -> String {
    v.iter()
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Starts a daemon from TOML on `s` in a thread; returns its registry.
fn start_daemon(
    toml: &str,
    s: UdpSocket,
    stop: &Arc<AtomicBool>,
) -> (Arc<Registry>, std::thread::JoinHandle<()>) {
    let cfg = SwitchConfig::from_toml(toml).expect("config");
    let mut d = SwitchDaemon::new(&cfg, s).expect("daemon");
    let reg = d.registry();
    let st = stop.clone();
    (reg, std::thread::spawn(move || d.run(&st).expect("runs")))
}

fn start_worker(
    socks: Vec<UdpSocket>,
    leaf: SocketAddr,
    pool: u16,
    hb_ms: u64,
    stop: &Arc<AtomicBool>,
) -> Worker {
    let cfg = WorkerConfig {
        leaf: Some(leaf),
        pool,
        heartbeat_ms: hb_ms,
        ..Default::default()
    };
    Worker::start(&cfg, socks, stop.clone()).expect("worker")
}

fn client_on(
    s: UdpSocket,
    target: SocketAddr,
    pool: u16,
    app: u32,
    wire: WireFamily,
) -> ClientReport {
    let mut c = Client::new(
        ClientConfig {
            targets: vec![Target {
                addr: target,
                weight: 1.0,
            }],
            pool,
            app_id: app,
            rate: 1500.0,
            duration_ms: 300,
            service: ServiceDist::Fixed { value_us: 100.0 },
            timeout_ms: 1000,
            seed: app as u64,
            wire,
            ..Default::default()
        },
        s,
    )
    .expect("client");
    c.run()
}

fn completed_all(r: &ClientReport) {
    assert!(r.accounted(), "{}", r.summary());
    assert!(r.submitted > 100, "{}", r.summary());
    assert_eq!(r.completed, r.submitted, "{}", r.summary());
    assert_eq!(
        r.unknown_replies + r.duplicate_replies,
        0,
        "{}",
        r.summary()
    );
}

/// The non-zero drop counters, for failure messages.
fn drops(reg: &Registry) -> String {
    reg.render()
        .lines()
        .filter(|l| l.starts_with("netsched_drops_total") && !l.ends_with(" 0"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Datagrams the runtime (not a data plane) dropped.
fn runtime_drops(reg: &Registry) -> u64 {
    netsched_node::switch::RuntimeDrop::ALL
        .iter()
        .map(|r| common::runtime_drop(reg, r.name()))
        .sum()
}

fn worker_tasks(w: &Worker) -> u64 {
    w.registry().sum("netsched_worker_tasks_total")
}

/// RackSched's wire names no pool (OSDI'20 §3.2): a daemon hosting two
/// RackSched racks tells their requests apart by the configured client that
/// sent them, and their REPs by the server that sent them.
#[test]
fn two_racksched_pools_in_one_daemon_serve_their_own_clients() {
    let stop = Arc::new(AtomicBool::new(false));
    let ds = sock();
    let daemon = ds.local_addr().unwrap();
    let ws: [Vec<UdpSocket>; 2] = [
        (0..2).map(|_| sock()).collect(),
        (0..2).map(|_| sock()).collect(),
    ];
    let wa: Vec<Vec<SocketAddr>> = ws
        .iter()
        .map(|v| v.iter().map(|s| s.local_addr().unwrap()).collect())
        .collect();
    let cs = [sock(), sock()];
    let ca: Vec<SocketAddr> = cs.iter().map(|s| s.local_addr().unwrap()).collect();
    let mut toml = format!("listen = \"{daemon}\"\nbatch = 16\n");
    for (k, pool) in [1u16, 2].iter().enumerate() {
        toml += &format!(
            "[[instance]]\npool = {pool}\nrole = \"leaf\"\npolicy = \"racksched\"\n\
             downstream = [{}]\nclients = [\"{}\"]\n",
            list(&wa[k]),
            ca[k]
        );
    }
    let (reg, h) = start_daemon(&toml, ds, &stop);
    let [w0, w1] = ws;
    let workers = [
        start_worker(w0, daemon, 1, 0, &stop),
        start_worker(w1, daemon, 2, 0, &stop),
    ];
    let [c0, c1] = cs;
    let t0 = std::thread::spawn(move || client_on(c0, daemon, 1, 31, WireFamily::Racksched));
    let t1 = std::thread::spawn(move || client_on(c1, daemon, 2, 32, WireFamily::Racksched));
    let (r0, r1) = (t0.join().unwrap(), t1.join().unwrap());
    completed_all(&r0);
    completed_all(&r1);
    // Each rack ran exactly its own client's tasks.
    assert_eq!(worker_tasks(&workers[0]), r0.submitted);
    assert_eq!(worker_tasks(&workers[1]), r1.submitted);
    assert_eq!(
        reg.value("netsched_rx_packets_total", "{type=\"racksched_reply\"}"),
        Some(r0.submitted + r1.submitted)
    );
    assert_eq!(reg.sum("netsched_drops_total"), 0, "{}", drops(&reg));
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    for w in workers {
        w.join();
    }
}

/// Horus §3.5 without switches: one daemon is both the spine and the leaf of
/// a pool. Tasks from the client enter the spine, which dispatches to its
/// rack (this daemon's own address); the leaf takes them because they come
/// from its upstream; worker replies go leaf → spine → client, and the
/// leaf's idle/load notices reach the co-hosted spine.
#[test]
fn one_daemon_hosts_the_spine_and_the_leaf_of_a_pool() {
    let stop = Arc::new(AtomicBool::new(false));
    let ds = sock();
    let daemon = ds.local_addr().unwrap();
    let ws: Vec<UdpSocket> = (0..2).map(|_| sock()).collect();
    let wa: Vec<SocketAddr> = ws.iter().map(|s| s.local_addr().unwrap()).collect();
    let toml = format!(
        "listen = \"{daemon}\"\nbatch = 16\n\
         [[instance]]\npool = 1\nrole = \"spine\"\ndownstream = [\"{daemon}\"]\nrack_workers = [2]\n\
         [[instance]]\npool = 1\nrole = \"leaf\"\nrack = 0\nupstream = [\"{daemon}\"]\n\
         downstream = [{}]\nheartbeat_timeout_ms = 2000\n",
        list(&wa)
    );
    let (reg, h) = start_daemon(&toml, ds, &stop);
    let worker = start_worker(ws, daemon, 1, 50, &stop);
    let r = client_on(sock(), daemon, 1, 41, WireFamily::Horus);
    completed_all(&r);
    assert_eq!(worker_tasks(&worker), r.submitted);
    let rx = |t: &str| {
        reg.value("netsched_rx_packets_total", &format!("{{type=\"{t}\"}}"))
            .unwrap()
    };
    // Every task crossed the daemon twice (client → spine, spine → leaf),
    // and so did every reply (worker → leaf, leaf → spine).
    assert_eq!(rx("task_first"), 2 * r.submitted);
    assert_eq!(rx("reply"), 2 * r.submitted);
    // The leaf's notices reached the spine and were accepted.
    assert!(rx("idle_remove") > 0 && rx("idle_add") > 0);
    // Stale idle notices are the data plane's own (§A.3 lazy repair).
    assert_eq!(runtime_drops(&reg), 0, "{}", drops(&reg));
    // Both instances' gauges exist, told apart by role.
    assert!(reg
        .value("netsched_live_nodes", "{pool=\"1\",role=\"spine\"}")
        .is_some());
    assert_eq!(
        reg.value("netsched_live_nodes", "{pool=\"1\",role=\"leaf\"}"),
        Some(2)
    );
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    worker.join();
}
