//! Bounded state that recovers: 10,000 made-up application
//! ids from one sender against an open spine must not lock a new client out,
//! and the sender's refused tasks are answered with a failed reply.

mod common;

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use common::{cluster, runtime_drop};
use netsched_config::workload::ServiceDist;
use netsched_node::config::{ClientConfig, Policy, Target};
use netsched_node::Client;
use netsched_proto::{task_id, HorusBody, HorusMessage, Message, ReplyStatus};

const POOL: u16 = 4;

fn task(app: u32) -> Vec<u8> {
    common::task_datagram(POOL, task_id::new(app, 1))
}

/// Failed replies naming `reason` that reach `s` until it is quiet.
fn failed_replies(s: &UdpSocket, reason: &[u8]) -> u64 {
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut buf = [0u8; 2048];
    let mut n = 0;
    while let Ok((len, _)) = s.recv_from(&mut buf) {
        if let Ok(Message::Horus(HorusMessage {
            body: HorusBody::Reply(r),
            ..
        })) = Message::decode(&buf[..len])
        {
            if r.status == ReplyStatus::Failed && r.payload == reason {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn ten_thousand_app_ids_do_not_lock_out_a_new_client() {
    let c = cluster(POOL, 1, 2, Policy::Horus);
    // Another host: routes are counted per host, so the new client must
    // not share the attacker's address.
    let attacker = UdpSocket::bind("127.0.0.2:0").unwrap();
    let t = Instant::now();
    for app in 0..10_000u32 {
        attacker.send_to(&task(1_000_000 + app), c.spine).unwrap();
        // Paced so the spine's socket buffer does not overflow: the point
        // is the table, not loss.
        if app % 256 == 255 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    assert!(t.elapsed() < Duration::from_secs(10));
    // The flood's refused tasks are answered, not silently dropped.
    let refused = failed_replies(&attacker, b"route_source_limit");
    // A new client is served in full.
    let mut cl = Client::bind(ClientConfig {
        targets: vec![Target {
            addr: c.spine,
            weight: 1.0,
        }],
        pool: POOL,
        app_id: 42,
        rate: 2_000.0,
        duration_ms: 300,
        service: ServiceDist::Fixed { value_us: 50.0 },
        timeout_ms: 1000,
        seed: 9,
        bind: "127.0.0.1:0".into(),
        ..Default::default()
    })
    .unwrap();
    let r = cl.run();
    let spine = c.spine_metrics.clone();
    c.shutdown().unwrap();
    assert!(r.submitted > 100, "{}", r.summary());
    assert_eq!(r.completed, r.submitted, "{}", r.summary());
    assert_eq!(runtime_drop(&spine, "route_table_full"), 0);
    let spine_refused = runtime_drop(&spine, "route_source_limit");
    assert!(spine_refused >= 9_000, "{spine_refused}");
    assert!(refused > 0);
}

/// Replies for application 42 that reach `s` until it is quiet: (ok,
/// failed `route_owned`).
fn replies_of(s: &UdpSocket) -> (u64, u64) {
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 2048];
    let (mut ok, mut owned) = (0, 0);
    while let Ok((len, _)) = s.recv_from(&mut buf) {
        if let Ok(Message::Horus(HorusMessage {
            body: HorusBody::Reply(r),
            ..
        })) = Message::decode(&buf[..len])
        {
            match r.status {
                ReplyStatus::Ok => ok += 1,
                _ if r.payload == b"route_owned" => owned += 1,
                _ => {}
            }
        }
    }
    (ok, owned)
}

/// A host that sends tasks under another client's application id while
/// that client runs receives none of its replies (before: the latest
/// sender owned the route, and took thousands), and the client loses
/// nothing; 80 ports of one host using 64 application ids each do not
/// lock a new application out either.
#[test]
fn another_hosts_tasks_cannot_take_an_applications_replies() {
    let c = cluster(POOL, 1, 2, Policy::Horus);
    let spine = c.spine;
    let thief = std::thread::spawn(move || {
        let s = UdpSocket::bind("127.0.0.2:0").unwrap();
        // Let the client's first task teach the route.
        std::thread::sleep(Duration::from_millis(100));
        for seq in 0..400u32 {
            s.send_to(
                &common::task_datagram(POOL, task_id::new(42, 1_000_000 + seq)),
                spine,
            )
            .unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut ports: Vec<UdpSocket> = (0..80)
            .map(|_| UdpSocket::bind("127.0.0.2:0").unwrap())
            .collect();
        for (p, port) in ports.iter_mut().enumerate() {
            for app in 0..64u32 {
                let _ = port.send_to(&task(5_000_000 + p as u32 * 64 + app), spine);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        replies_of(&s)
    });
    let run = |app_id: u32, ms: u64| {
        Client::bind(ClientConfig {
            targets: vec![Target {
                addr: spine,
                weight: 1.0,
            }],
            pool: POOL,
            app_id,
            rate: 1_000.0,
            duration_ms: ms,
            service: ServiceDist::Fixed { value_us: 50.0 },
            timeout_ms: 1000,
            seed: 9,
            bind: "127.0.0.1:0".into(),
            ..Default::default()
        })
        .unwrap()
        .run()
    };
    let r = run(42, 1_000);
    let (stolen, owned) = thief.join().unwrap();
    // A new application after the ports' flood.
    let fresh = run(43, 300);
    let spine_metrics = c.spine_metrics.clone();
    c.shutdown().unwrap();
    assert_eq!(stolen, 0, "replies the thief received");
    // Answered (as many as its socket buffer kept) and counted.
    assert!(owned > 0, "no route_owned answer reached the thief");
    assert_eq!(runtime_drop(&spine_metrics, "route_owned"), 400);
    assert_eq!(r.completed, r.submitted, "{}", r.summary());
    assert!(r.submitted > 500, "{}", r.summary());
    assert_eq!(fresh.completed, fresh.submitted, "{}", fresh.summary());
    assert!(runtime_drop(&spine_metrics, "route_source_limit") >= 80 * 64 - 64);
}
