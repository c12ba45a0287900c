//! RocksDB tasks end to end: the client's GET (60 objects) and SCAN (5,000
//! objects) requests, RackSched §4.4's mix, scheduled by a RackSched leaf on
//! its own wire to workers with an embedded RocksDB each process.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::sock;
use netsched_node::config::{Target, WireFamily};
use netsched_node::tasks::RocksConfig;
use netsched_node::{Client, ClientConfig, SwitchConfig, SwitchDaemon, Worker, WorkerConfig};
use netsched_sim::workload::{ServiceDist, ServicePreset};

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
    assert!(reg.sum("netsched_worker_busy_ns_total") > 0);
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
