//! Malformed, spoofed and misdirected datagrams are dropped and counted by
//! reason; the daemon keeps working (DESIGN.md: never a panic).

mod common;

use std::time::Duration;

use common::{dp_drop, runtime_drop, sock, switch_config};
use netsched_node::config::{Policy, PoolConfig, Role};
use netsched_node::{SwitchConfig, SwitchDaemon};
use netsched_proto::{
    decode, task_id, HorusBody, HorusHeader, HorusMessage, HorusReply, HorusTask, Message,
    RackSchedLoadReport, RackSchedMessage, ReplyStatus,
};

/// An empty success reply to `task_id` in pool 5 from node 0 (a worker, or
/// a leaf replying up).
fn ok_reply(task_id: u64) -> Vec<u8> {
    horus(
        5,
        0,
        HorusBody::Reply(HorusReply {
            task_id,
            status: ReplyStatus::Ok,
            payload: b"",
        }),
    )
}

fn horus(pool: u16, src: u16, body: HorusBody<'_>) -> Vec<u8> {
    Message::Horus(HorusMessage {
        header: HorusHeader {
            pool_id: pool,
            src_id: src,
            ..Default::default()
        },
        body,
    })
    .to_vec()
    .unwrap()
}

fn task(id: u64, first: bool, last: bool) -> HorusBody<'static> {
    let t = HorusTask {
        task_id: id,
        is_last: last,
        service_time_ns: 1000,
        ..Default::default()
    };
    if first {
        HorusBody::TaskFirst(t)
    } else {
        HorusBody::TaskContinuation(t)
    }
}

fn recv(s: &std::net::UdpSocket) -> Vec<u8> {
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut b = [0u8; 2048];
    let (n, _) = s.recv_from(&mut b).expect("a datagram");
    b[..n].to_vec()
}

#[test]
fn bad_datagrams_are_counted_by_reason_and_never_crash() {
    let leaf0 = sock();
    let leaf1 = sock();
    let leaves = vec![leaf0.local_addr().unwrap(), leaf1.local_addr().unwrap()];
    let cfg = switch_config(vec![PoolConfig {
        rack_workers: vec![2, 2],
        ..PoolConfig::new(5, Role::Spine, Policy::Horus, leaves)
    }]);
    let mut d = SwitchDaemon::new(&cfg, sock()).unwrap();
    let reg = d.registry();
    let client = sock();
    let spoofer = sock();
    let c = client.local_addr().unwrap();
    let l0 = leaf0.local_addr().unwrap();
    let evil = spoofer.local_addr().unwrap();
    let good = horus(5, 0, task(task_id::new(1, 1), true, true));

    d.on_datagram(&[], c, 1);
    d.on_datagram(&good[..10], c, 2); // truncated
    d.on_datagram(&[0x11, 0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], c, 3); // unknown type
    d.on_datagram(&[0x21, 0x01], c, 4); // wire version 2
    let mut trailing = horus(5, 0, HorusBody::IdleAdd);
    trailing.push(0);
    d.on_datagram(&trailing, l0, 5);
    // RackSched family: a LOAD_REPORT names its pool, here one not served.
    let rs = Message::RackSched(RackSchedMessage::LoadReport(RackSchedLoadReport {
        src_id: 0,
        pool_id: 6,
        load: 1,
    }))
    .to_vec()
    .unwrap();
    d.on_datagram(&rs, l0, 6);
    // Pull scheduling has its own daemon (pull_switch): not served here.
    let pull = Message::Draconis(netsched_proto::DraconisMessage::TaskRequest {
        node: 0,
        resources: 0,
    })
    .to_vec()
    .unwrap();
    d.on_datagram(&pull, l0, 6);
    d.on_datagram(&horus(6, 0, task(task_id::new(1, 2), true, true)), c, 7); // unknown pool
                                                                             // Load update claiming to be rack 0 from an unregistered address.
    d.on_datagram(
        &horus(5, 0, HorusBody::LoadUpdate { load: 1 << 20 }),
        evil,
        8,
    );
    // Idle add from rack 1's sibling claiming rack 1 (wrong address for that id).
    d.on_datagram(&horus(5, 1, HorusBody::IdleAdd), l0, 9);
    // A rack id this spine does not have.
    d.on_datagram(&horus(5, 9, HorusBody::IdleRemove), l0, 10);
    // Heartbeats belong to leaves.
    d.on_datagram(&horus(5, 0, HorusBody::KeepAlive), l0, 11);
    // A reply for an application whose tasks never came here.
    let orphan = ok_reply(task_id::new(99, 1));
    d.on_datagram(&orphan, l0, 12);
    // A reply from an address that is no leaf of this spine.
    d.on_datagram(&orphan, evil, 13);

    for (reason, n) in [
        ("truncated", 2),
        ("unknown_type", 1),
        ("inconsistent", 1),
        ("trailing_bytes", 1),
        ("unsupported_family", 1),
        ("unknown_pool", 2),
        ("unregistered_source", 4),
        ("wrong_role", 1),
        ("no_route", 1),
    ] {
        assert_eq!(runtime_drop(&reg, reason), n, "{reason}");
    }
    assert_eq!(
        reg.value("netsched_rx_packets_total", "{type=\"invalid\"}"),
        Some(6)
    );
    assert_eq!(
        reg.value(
            "netsched_rx_packets_total",
            "{type=\"racksched_load_report\"}"
        ),
        Some(1)
    );
    // No spoofed notice reached the data plane.
    assert_eq!(reg.sum("netsched_resubmissions_total"), 0);
    assert_eq!(
        reg.value("netsched_tx_packets_total", "{type=\"task\"}"),
        Some(0)
    );

    // Still alive: a valid task is dispatched to a leaf, idle-selected
    // (both racks start idle, §3.4).
    d.on_datagram(&good, c, 20);
    let got = [&leaf0, &leaf1]
        .iter()
        .find_map(|s| {
            s.set_nonblocking(true).unwrap();
            let mut b = [0u8; 2048];
            s.recv_from(&mut b).ok().map(|(n, _)| b[..n].to_vec())
        })
        .or_else(|| {
            std::thread::sleep(Duration::from_millis(50));
            [&leaf0, &leaf1].iter().find_map(|s| {
                let mut b = [0u8; 2048];
                s.recv_from(&mut b).ok().map(|(n, _)| b[..n].to_vec())
            })
        })
        .expect("task forwarded to a leaf");
    match decode(&got).unwrap() {
        Message::Horus(HorusMessage {
            body: HorusBody::TaskFirst(t),
            ..
        }) => {
            assert_eq!(t.task_id, task_id::new(1, 1));
            assert!(t.idle_selected);
        }
        m => panic!("unexpected {m:?}"),
    }

    // A continuation without a connection-table entry is dropped by the data
    // plane (§A.4) and the client hears why.
    d.on_datagram(&horus(5, 0, task(task_id::new(1, 3), false, true)), c, 30);
    assert_eq!(dp_drop(&reg, "no_affinity"), 1);
    match decode(&recv(&client)).unwrap() {
        Message::Horus(HorusMessage {
            body: HorusBody::Reply(r),
            ..
        }) => {
            assert_eq!(r.task_id, task_id::new(1, 3));
            assert_eq!(r.status, ReplyStatus::Failed);
            assert_eq!(r.payload, b"no_affinity");
        }
        m => panic!("unexpected {m:?}"),
    }
}

#[test]
fn random_bytes_never_panic() {
    let workers = vec!["127.0.0.1:9".parse().unwrap(); 4];
    let mut d = SwitchDaemon::new(
        &switch_config(vec![PoolConfig::new(1, Role::Leaf, Policy::Horus, workers)]),
        sock(),
    )
    .unwrap();
    let src = "127.0.0.1:10".parse().unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut buf = [0u8; 64];
    for i in 0..20_000u64 {
        for b in buf.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        // Mostly plausible Horus headers for pool 1, so deeper paths run.
        buf[0] = 0x11;
        buf[1] = (x % 9) as u8;
        buf[2] = 0;
        buf[3] = (i % 3) as u8;
        let len = (x >> 8) as usize % buf.len();
        d.on_datagram(&buf[..len], src, i);
    }
    assert!(d.registry().sum("netsched_drops_total") > 0);
}

// ---- source checks: RackSched wire, spoofed tasks, bounded routes ----

use std::net::{SocketAddr, UdpSocket};

use netsched_proto::{RackSchedPacket, ReqId};

fn try_recv(s: &UdpSocket, ms: u64) -> Option<Vec<u8>> {
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(ms))).unwrap();
    let mut b = [0u8; 2048];
    s.recv_from(&mut b).ok().map(|(n, _)| b[..n].to_vec())
}

fn rs(m: RackSchedMessage<'_>) -> Vec<u8> {
    Message::RackSched(m).to_vec().unwrap()
}

fn rs_packet(client: u32, local: u32, load: u32) -> RackSchedPacket<'static> {
    RackSchedPacket {
        req_id: ReqId {
            client_id: client,
            local_id: local,
        },
        load,
        is_last: true,
        class: 0,
        service_time_ns: 1000,
        payload: b"",
    }
}

fn daemon_from(toml: &str) -> SwitchDaemon {
    SwitchDaemon::new(&SwitchConfig::from_toml(toml).unwrap(), sock()).unwrap()
}

fn l(v: &[SocketAddr]) -> String {
    v.iter()
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// RackSched requests and replies carry no pool id: a daemon with several
/// instances places them by source, and drops (counted) what it cannot place
/// or what comes from an address no instance knows, without touching state.
#[test]
fn racksched_wire_is_placed_by_source_or_dropped() {
    let servers = [sock(), sock()];
    let sa: Vec<SocketAddr> = servers.iter().map(|s| s.local_addr().unwrap()).collect();
    let leaf_of_spine = sock().local_addr().unwrap();
    // Pools 1 and 2: open RackSched racks (no client lists); pool 3: an RS-H
    // spine over one leaf.
    let mut d = daemon_from(&format!(
        "listen = \"127.0.0.1:0\"\n\
         [[instance]]\npool = 1\nrole = \"leaf\"\npolicy = \"racksched\"\ndownstream = [\"{}\"]\n\
         [[instance]]\npool = 2\nrole = \"leaf\"\npolicy = \"racksched\"\ndownstream = [\"{}\"]\n\
         [[instance]]\npool = 3\nrole = \"spine\"\npolicy = \"racksched\"\ndownstream = [\"{leaf_of_spine}\"]\n",
        sa[0], sa[1]
    ));
    let reg = d.registry();
    let client = sock();
    let c = client.local_addr().unwrap();
    let evil: SocketAddr = sock().local_addr().unwrap();

    // Two open racks: nothing on the wire says which one a request is for.
    d.on_datagram(&rs(RackSchedMessage::ReqFirst(rs_packet(7, 1, 0))), c, 1);
    assert_eq!(runtime_drop(&reg, "ambiguous_source"), 1);
    assert!(servers.iter().all(|s| try_recv(s, 50).is_none()));

    // A REP from no server of any instance, with a load that would steer
    // power-of-2 if it were believed: dropped before any data plane sees it.
    d.on_datagram(&rs(RackSchedMessage::Reply(rs_packet(7, 1, 1000))), evil, 2);
    assert_eq!(runtime_drop(&reg, "unregistered_source"), 1);
    for pool in ["1", "2"] {
        assert_eq!(
            reg.value(
                "netsched_reported_queue_length",
                &format!("{{pool=\"{pool}\",node=\"0\"}}")
            ),
            Some(0)
        );
    }
    // A REP from a real server for a request that never passed: no route.
    d.on_datagram(&rs(RackSchedMessage::Reply(rs_packet(7, 1, 3))), sa[1], 3);
    assert_eq!(runtime_drop(&reg, "no_route"), 1);

    // LOAD_REPORTs: at a leaf (wrong role), and at the spine from an
    // address that is not the leaf it names.
    let report = |pool| {
        rs(RackSchedMessage::LoadReport(RackSchedLoadReport {
            src_id: 0,
            pool_id: pool,
            load: 5 << 16,
        }))
    };
    d.on_datagram(&report(1), evil, 4);
    assert_eq!(runtime_drop(&reg, "wrong_role"), 1);
    d.on_datagram(&report(3), evil, 5);
    assert_eq!(runtime_drop(&reg, "unregistered_source"), 2);
    // Nothing reached a data plane, nothing was sent.
    assert_eq!(reg.sum("netsched_decisions_total"), 0);
    assert_eq!(reg.sum("netsched_pipeline_passes_total"), 0);
    assert_eq!(reg.sum("netsched_tx_packets_total"), 0);
    assert!(try_recv(&client, 50).is_none());
    assert_eq!(reg.sum("netsched_drops_total"), 5);
}

/// A leaf with a client list takes tasks only from its clients (and
/// spines): a forged task for another application's id neither runs nor
/// moves that application's reply route.
#[test]
fn a_spoofed_task_cannot_redirect_replies() {
    let worker = sock();
    let w = worker.local_addr().unwrap();
    let client = sock();
    let c = client.local_addr().unwrap();
    let spoofer = sock();
    let evil = spoofer.local_addr().unwrap();
    let mut d = daemon_from(&format!(
        "listen = \"127.0.0.1:0\"\n[[instance]]\npool = 5\nrole = \"leaf\"\n\
         downstream = [{}]\nclients = [{}]\n",
        l(&[w]),
        l(&[c])
    ));
    let reg = d.registry();
    let app = 7;
    d.on_datagram(&horus(5, 0, task(task_id::new(app, 1), true, true)), c, 1);
    let got = try_recv(&worker, 1000).expect("the client's task at the worker");
    assert!(matches!(
        decode(&got).unwrap(),
        Message::Horus(HorusMessage { body: HorusBody::TaskFirst(t), .. }) if t.task_id == task_id::new(app, 1)
    ));
    // The spoofer claims the same application.
    d.on_datagram(
        &horus(5, 0, task(task_id::new(app, 2), true, true)),
        evil,
        2,
    );
    assert_eq!(runtime_drop(&reg, "unregistered_source"), 1);
    assert!(try_recv(&worker, 50).is_none(), "forged task dispatched");
    // The worker's reply still goes to the client.
    let reply = ok_reply(task_id::new(app, 1));
    d.on_datagram(&reply, w, 3);
    assert_eq!(try_recv(&client, 1000), Some(reply));
    assert!(try_recv(&spoofer, 50).is_none(), "reply stolen");
}

/// An open instance learns routes from anyone, but into a table of fixed
/// size: a new application beyond it is refused and counted, and the routes
/// it holds keep working.
#[test]
fn the_reply_route_table_is_bounded() {
    let worker = sock();
    let w = worker.local_addr().unwrap();
    let clients = [sock(), sock()];
    let ca: Vec<SocketAddr> = clients.iter().map(|s| s.local_addr().unwrap()).collect();
    let mut d = daemon_from(&format!(
        "listen = \"127.0.0.1:0\"\n[[instance]]\npool = 5\nrole = \"leaf\"\npolicy = \"random\"\n\
         downstream = [{}]\nmax_routes = 1\n",
        l(&[w])
    ));
    let reg = d.registry();
    d.on_datagram(&horus(5, 0, task(task_id::new(1, 1), true, true)), ca[0], 1);
    assert!(try_recv(&worker, 1000).is_some());
    d.on_datagram(&horus(5, 0, task(task_id::new(2, 1), true, true)), ca[1], 2);
    assert_eq!(runtime_drop(&reg, "route_table_full"), 1);
    assert!(try_recv(&worker, 50).is_none());
    let reply = ok_reply(task_id::new(1, 1));
    d.on_datagram(&reply, w, 3);
    assert_eq!(try_recv(&clients[0], 1000), Some(reply));
}

// ---- garbage at the worker agent and at the controller ----

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use netsched_node::controller::proto::{ControlMsg, DaemonStatus, Sealer};
use netsched_node::controller::{http, Controller, ControllerConfig};
use netsched_node::secret::ClusterKey;

const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
use netsched_node::{Worker, WorkerConfig};

fn garbage() -> Vec<Vec<u8>> {
    let good = horus(1, 0, task(task_id::new(1, 1), true, true));
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let random: Vec<u8> = (0..40)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    vec![
        vec![],
        good[..9].to_vec(),                             // truncated
        vec![0x11, 0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], // unknown type
        random,                                         // random bytes
        horus(1, 0, HorusBody::KeepAlive),              // not a task
    ]
}

#[test]
fn the_worker_drops_and_counts_garbage_and_keeps_serving() {
    let stop = Arc::new(AtomicBool::new(false));
    let ws = sock();
    let wa = ws.local_addr().unwrap();
    let w = Worker::start(
        &WorkerConfig {
            heartbeat_ms: 0,
            ..Default::default()
        },
        vec![ws],
        stop.clone(),
    )
    .unwrap();
    let reg = w.registry();
    let sender = sock();
    let junk = garbage();
    for g in &junk {
        sender.send_to(g, wa).unwrap();
    }
    // Then a real task: answered to its sender (no leaf configured).
    let id = task_id::new(3, 9);
    sender
        .send_to(&horus(1, 0, task(id, true, true)), wa)
        .unwrap();
    let r = try_recv(&sender, 2000).expect("the worker still answers");
    match decode(&r).unwrap() {
        Message::Horus(HorusMessage {
            body: HorusBody::Reply(rep),
            ..
        }) => {
            assert_eq!(rep.task_id, id);
            assert_eq!(rep.status, ReplyStatus::Ok);
        }
        m => panic!("unexpected {m:?}"),
    }
    assert_eq!(reg.sum("netsched_worker_invalid_total"), junk.len() as u64);
    stop.store(true, Ordering::Relaxed);
    w.join();
}

#[test]
fn the_controller_counts_what_it_rejects_by_reason() {
    let port = || sock().local_addr().unwrap();
    // The controller's own sockets bind port 0 and are read back (a port
    // picked and released here could be taken before it binds).
    let (spine, leaf, exec) = (port(), port(), port());
    let stop = Arc::new(AtomicBool::new(false));
    let cfg = ControllerConfig::from_toml(&format!(
        "listen = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\ntoken = \"t0k3n-for-tests\"\nkey = \"{KEY}\"\n\
         [[pool]]\nid = 1\nspines = [\"{spine}\"]\n[[pool.rack]]\nleaf = \"{leaf}\"\nworkers = [\"{exec}\"]\n"
    ))
    .unwrap();
    let c = Controller::start(&cfg, stop.clone()).unwrap();
    let (ctl, admin) = (c.control_addr, c.admin_addr);
    let reg = c.registry();
    let rejected = |why: &str| {
        reg.value(
            "netsched_control_rejected_total",
            &format!("{{reason=\"{why}\"}}"),
        )
        .unwrap()
    };
    // From the spine's own address: past the source check, so the sealing
    // is what refuses them.
    let s = UdpSocket::bind(spine).unwrap();
    let key = ClusterKey::from_hex(KEY).unwrap();
    let mut sealer = Sealer::new(key.clone(), spine);
    let status = ControlMsg::Status(DaemonStatus { instances: vec![] });
    let mut unsealed = b"NSC1".to_vec();
    unsealed.extend_from_slice(br#"{"op":"status","instances":[]}"#);
    for g in garbage() {
        s.send_to(&g, c.control_addr).unwrap(); // no control magic
    }
    s.send_to(&unsealed, c.control_addr).unwrap(); // the pre-MAC format
    let mut other = Sealer::new(ClusterKey::generate().unwrap(), spine);
    s.send_to(&other.seal(&status, ctl, 0), c.control_addr)
        .unwrap(); // another key
    sock()
        .send_to(&sealer.seal(&status, ctl, 0), c.control_addr)
        .unwrap(); // from no daemon
    s.send_to(
        &sealer.seal(&ControlMsg::Resync { pool: 1 }, ctl, 0),
        c.control_addr,
    )
    .unwrap();
    // Sealed for another destination.
    s.send_to(&sealer.seal(&status, leaf, 0), c.control_addr)
        .unwrap();
    let want = [
        ("not_control", garbage().len() as u64),
        ("bad_mac", 2),
        ("unknown_source", 1),
        ("unexpected_type", 1),
        ("misaddressed", 1),
    ];
    let t = std::time::Instant::now();
    while want.iter().any(|(why, n)| rejected(why) != *n) {
        assert!(
            t.elapsed() < Duration::from_secs(3),
            "{:?}",
            want.map(|(why, _)| (why, rejected(why)))
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The admin API: no token, and a body that is not JSON.
    assert_eq!(
        http(admin, "GET", "/v1/topology", None, None).unwrap().0,
        401
    );
    let add_worker = |body: &str| {
        let token = Some("t0k3n-for-tests");
        http(admin, "POST", "/v1/workers", token, Some(body))
            .unwrap()
            .0
    };
    assert_eq!(add_worker("{"), 400);
    assert_eq!(
        add_worker("{\"pool\": 9, \"rack\": 0, \"addr\": \"127.0.0.1:1\"}"),
        404
    );
    assert_eq!(rejected("bad_auth"), 1);
    assert_eq!(rejected("bad_request"), 1);
    assert_eq!(rejected("not_found"), 1);
    // Still serving.
    assert_eq!(
        http(admin, "GET", "/v1/topology", Some("t0k3n-for-tests"), None)
            .unwrap()
            .0,
        200
    );
    stop.store(true, Ordering::Relaxed);
    c.join();
}
