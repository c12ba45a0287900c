//! RocksDB tasks end to end: the client's GET (60 objects) and SCAN (5,000
//! objects) requests, RackSched §4.4's mix, scheduled by a RackSched leaf on
//! its own wire to workers with an embedded RocksDB each process; and
//! RocksDB requests preempted at 250 µs (RackSched §4).

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::sock;
use netsched_config::workload::{ServiceDist, ServicePreset};
use netsched_node::config::{Target, WireFamily};
use netsched_node::tasks::{RocksConfig, TaskKind, GET_OBJECTS, ROCKS_PAYLOAD_LEN, SCAN_OBJECTS};
use netsched_node::{Client, ClientConfig, SwitchConfig, SwitchDaemon, Worker, WorkerConfig};
use netsched_proto::{task_id, HorusBody, HorusMessage, HorusTask, Message, ReplyStatus};

fn client(target: std::net::SocketAddr, keys: u32) -> ClientConfig {
    ClientConfig {
        targets: vec![Target {
            addr: target,
            weight: 1.0,
        }],
        pool: 1,
        app_id: 3,
        rate: 300.0,
        duration_ms: 400,
        service: ServiceDist::Preset {
            name: ServicePreset::RsRocksdb9010,
        },
        timeout_ms: 2000,
        seed: 2,
        wire: WireFamily::Racksched,
        rocksdb_keys: keys,
        ..Default::default()
    }
}

#[test]
fn get_and_scan_run_on_the_workers_database() {
    let stop = Arc::new(AtomicBool::new(false));
    let ws = vec![sock(), sock()];
    let addrs: Vec<String> = ws
        .iter()
        .map(|s| format!("\"{}\"", s.local_addr().unwrap()))
        .collect();
    let cfg = SwitchConfig::from_toml(&format!(
        "listen = \"127.0.0.1:0\"\n[[instance]]\npool = 1\nrole = \"leaf\"\n\
         policy = \"racksched\"\ndownstream = [{}]\n",
        addrs.join(", ")
    ))
    .unwrap();
    let mut d = SwitchDaemon::new(&cfg, sock()).unwrap();
    let leaf = d.local_addr();
    let s = stop.clone();
    let daemon = std::thread::spawn(move || d.run(&s).unwrap());
    let keys = 20_000;
    let w = Worker::start(
        &WorkerConfig {
            heartbeat_ms: 0,
            rocksdb: Some(RocksConfig {
                keys,
                value_bytes: 32,
                path: None,
            }),
            ..Default::default()
        },
        ws,
        stop.clone(),
    )
    .unwrap();
    let reg = w.registry();
    let r = Client::bind(client(leaf, keys)).unwrap().run();
    stop.store(true, Ordering::Relaxed);
    daemon.join().unwrap();
    w.join();
    assert!(r.accounted(), "{}", r.summary());
    assert!(r.submitted > 60, "{}", r.summary());
    assert_eq!(r.completed, r.submitted, "{}", r.summary());
    assert_eq!(reg.sum("netsched_worker_failed_total"), 0);
    // The packets carried no service time: the time is RocksDB's work.
    assert!(reg.sum_f64("netsched_worker_busy_seconds_total") > 0.0);
}

#[test]
fn rocksdb_tasks_fail_with_a_reason_on_a_worker_without_database() {
    let stop = Arc::new(AtomicBool::new(false));
    let s = sock();
    let addr = s.local_addr().unwrap();
    let w = Worker::start(
        &WorkerConfig {
            heartbeat_ms: 0,
            ..Default::default()
        },
        vec![s],
        stop.clone(),
    )
    .unwrap();
    let r = Client::bind(client(addr, 1000)).unwrap().run();
    stop.store(true, Ordering::Relaxed);
    w.join();
    assert!(r.accounted(), "{}", r.summary());
    assert!(r.submitted > 0);
    assert_eq!(
        r.failed.get("no_rocksdb"),
        Some(&r.submitted),
        "{}",
        r.summary()
    );
}

/// Sends one task as a Horus TaskFirst from `from`: a RocksDB request, or
/// (`TaskKind::Synthetic`) a timer task of `service_ns`.
fn send_task(
    from: &std::net::UdpSocket,
    to: std::net::SocketAddr,
    seq: u32,
    kind: TaskKind,
    service_ns: u64,
) {
    let mut payload = [0u8; ROCKS_PAYLOAD_LEN];
    let n = kind.encode(&mut payload);
    let msg = Message::Horus(HorusMessage::task_first(
        1,
        HorusTask {
            task_id: task_id::new(9, seq),
            is_last: true,
            idle_selected: false,
            class: 0,
            service_time_ns: service_ns,
            payload: &payload[..n],
        },
    ));
    let mut buf = [0u8; 256];
    let len = msg.encode(&mut buf).unwrap();
    from.send_to(&buf[..len], to).unwrap();
}

/// Reads `n` replies; returns those to RocksDB tasks in arrival order:
/// (task seq, objects read, digest hash). Synthetic tasks' (empty payload)
/// are left out.
fn replies(s: &std::net::UdpSocket, n: usize) -> Vec<(u32, u64, u64)> {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 2048];
    std::iter::repeat_with(|| {
        let len = s.recv(&mut buf).expect("a reply within 5 s");
        let Ok(Message::Horus(HorusMessage {
            body: HorusBody::Reply(r),
            ..
        })) = Message::decode(&buf[..len])
        else {
            panic!("not a reply");
        };
        assert_eq!(r.status, ReplyStatus::Ok);
        if r.payload.is_empty() {
            return None;
        }
        assert_eq!(r.payload.len(), 16, "a RocksDB result: objects, hash");
        let objects = u64::from_be_bytes(r.payload[..8].try_into().unwrap());
        let hash = u64::from_be_bytes(r.payload[8..].try_into().unwrap());
        Some((task_id::seq(r.task_id), objects, hash))
    })
    .take(n)
    .flatten()
    .collect()
}

/// RackSched §4 (Shinjuku): a request running longer than 250 µs is
/// preempted and goes back to the server queue's tail, so the GETs that
/// arrived behind a SCAN of 5,000 objects finish before it; the SCAN, run
/// in slices that re-seek, reads exactly what an unpreempted one does.
#[test]
fn a_scan_is_preempted_at_250_us_and_gets_behind_it_finish_first() {
    let keys = 20_000;
    let start = |preempt_us: u64, stop: &Arc<AtomicBool>| {
        Worker::start(
            &WorkerConfig {
                heartbeat_ms: 0,
                executors: 1,
                preempt_us,
                rocksdb: Some(RocksConfig {
                    keys,
                    value_bytes: 64,
                    path: None,
                }),
                ..Default::default()
            },
            vec![sock()],
            stop.clone(),
        )
        .unwrap()
    };
    let stop = Arc::new(AtomicBool::new(false));
    let preempting = start(250, &stop);
    let whole = start(0, &stop);
    let scan = TaskKind::Scan {
        key: 17_000, // wraps past the last key into key 0
        count: SCAN_OBJECTS,
    };
    let get = |i: u32| TaskKind::Get {
        key: 100 * i,
        count: GET_OBJECTS,
    };
    let mut seen = Vec::new();
    for w in [&preempting, &whole] {
        let c = sock();
        // A 20 ms timer task first, so the SCAN and the GETs are all queued
        // before the SCAN starts even if this thread loses its core between
        // sends (2 shared cores). Preempted too, it only interleaves.
        send_task(&c, w.addrs()[0], 99, TaskKind::Synthetic, 20_000_000);
        send_task(&c, w.addrs()[0], 0, scan, 0);
        for i in 1..=3 {
            send_task(&c, w.addrs()[0], i, get(i), 0);
        }
        seen.push(replies(&c, 5));
    }
    let (p_reg, w_reg) = (preempting.registry(), whole.registry());
    stop.store(true, Ordering::Relaxed);
    preempting.join();
    whole.join();
    let order = |r: &[(u32, u64, u64)]| r.iter().map(|x| x.0).collect::<Vec<_>>();
    // Run to completion: FIFO, the GETs wait for the whole SCAN.
    assert_eq!(order(&seen[1]), vec![0, 1, 2, 3]);
    assert_eq!(w_reg.sum("netsched_worker_preemptions_total"), 0);
    assert_eq!(p_reg.sum("netsched_worker_tasks_total"), 5);
    let scan_ns = (w_reg.sum_f64("netsched_worker_busy_seconds_total") * 1e9) as u64 - 20_000_000;
    // GET 60 ≈ 40-50 µs, SCAN 5000 ≈ 0.7-0.9 ms on this machine.
    assert!(
        scan_ns > 500_000,
        "this test needs a SCAN of 5,000 objects well over one slice ({scan_ns} ns for all four tasks)"
    );
    // Preempted: the SCAN's first slice ends at 250 µs, the GETs (≈ 40 µs
    // each) run, then the SCAN's remaining slices. The order alone proves
    // the SCAN was cut: the GETs queued behind it could not finish first
    // otherwise. (The preemption counter cannot say how many slices the
    // SCAN took: the timer task's slices are charged what they ran, so a
    // loaded machine's late wake-ups give it fewer than 79 preemptions.)
    let p = &seen[0];
    let preemptions = p_reg.sum("netsched_worker_preemptions_total");
    assert_eq!(
        order(p).last(),
        Some(&0),
        "GETs finish before the SCAN ({preemptions} preemptions, {scan_ns} ns busy unpreempted): {p:?}"
    );
    assert!(
        preemptions >= 2,
        "the timer task's and the SCAN's: {preemptions}"
    );
    // Same result, sliced or not.
    let result = |r: &[(u32, u64, u64)], seq| *r.iter().find(|x| x.0 == seq).unwrap();
    for seq in 0..4 {
        assert_eq!(result(&seen[0], seq), result(&seen[1], seq), "task {seq}");
    }
    assert_eq!(result(p, 0).1, SCAN_OBJECTS as u64);
    assert_eq!(result(p, 1).1, GET_OBJECTS as u64);
    assert_eq!(
        p_reg.sum("netsched_worker_rocksdb_objects_total"),
        SCAN_OBJECTS as u64 + 3 * GET_OBJECTS as u64
    );
}
