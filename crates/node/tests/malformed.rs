//! Malformed, spoofed and misdirected datagrams are dropped and counted by
//! reason; the daemon keeps working (DESIGN.md: never a panic).

mod common;

use std::time::Duration;

use common::{dp_drop, runtime_drop, sock};
use netsched_node::config::{PolicyName, PoolConfig, Role};
use netsched_node::{SwitchConfig, SwitchDaemon};
use netsched_proto::{
    decode, task_id, HorusBody, HorusHeader, HorusMessage, HorusReply, HorusTask, Message,
    RackSchedLoadReport, RackSchedMessage, ReplyStatus,
};

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
    let cfg = SwitchConfig {
        listen: "127.0.0.1:0".into(),
        metrics: None,
        seed: 1,
        batch: 8,
        fail_replies: true,
        instances: vec![PoolConfig {
            pool: 5,
            role: Role::Spine,
            policy: PolicyName::Horus,
            downstream: vec![leaf0.local_addr().unwrap(), leaf1.local_addr().unwrap()],
            rack_workers: vec![2, 2],
            upstream: vec![],
            rack: 0,
            heartbeat_timeout_ms: 0,
            clients: Vec::new(),
            max_routes: netsched_node::config::DEFAULT_MAX_ROUTES,
        }],
        ..Default::default()
    };
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
    let orphan = horus(
        5,
        0,
        HorusBody::Reply(HorusReply {
            task_id: task_id::new(99, 1),
            status: ReplyStatus::Ok,
            payload: b"",
        }),
    );
    d.on_datagram(&orphan, l0, 12);
    // A reply from an address that is no leaf of this spine.
    d.on_datagram(&orphan, evil, 13);

    for (reason, n) in [
        ("truncated", 2),
        ("unknown_type", 1),
        ("inconsistent", 1),
        ("trailing_bytes", 1),
        ("unsupported_family", 0),
        ("unknown_pool", 2),
        ("unregistered_source", 4),
        ("wrong_role", 1),
        ("no_route", 1),
    ] {
        assert_eq!(runtime_drop(&reg, reason), n, "{reason}");
    }
    assert_eq!(
        reg.value("netsched_rx_packets_total", "{type=\"invalid\"}"),
        Some(5)
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
    let mut d = SwitchDaemon::new(
        &SwitchConfig {
            listen: "127.0.0.1:0".into(),
            metrics: None,
            seed: 1,
            batch: 8,
            fail_replies: true,
            instances: vec![PoolConfig {
                pool: 1,
                role: Role::Leaf,
                policy: PolicyName::Horus,
                downstream: vec!["127.0.0.1:9".parse().unwrap(); 4],
                rack_workers: vec![],
                upstream: vec![],
                rack: 0,
                heartbeat_timeout_ms: 0,
                clients: Vec::new(),
                max_routes: netsched_node::config::DEFAULT_MAX_ROUTES,
            }],
            ..Default::default()
        },
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
