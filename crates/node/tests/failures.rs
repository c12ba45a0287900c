//! The leaf controller's heartbeat timeout (Horus §A.3): a silent worker is
//! removed from the data plane, so no task is sent to it, and comes back when
//! it is heard from again.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::sock;
use netsched_config::workload::ServiceDist;
use netsched_node::config::{ClientConfig, Policy, PoolConfig, Role, Target};
use netsched_node::metrics::Registry;
use netsched_node::{Client, SwitchConfig, SwitchDaemon, Worker, WorkerConfig};

fn wait_for(reg: &Registry, name: &str, labels: &str, want: u64) {
    let t = Instant::now();
    while reg.value(name, labels) != Some(want) {
        assert!(
            t.elapsed() < Duration::from_secs(3),
            "{name}{labels} = {:?}, want {want}",
            reg.value(name, labels)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn silent_worker_is_removed_and_readmitted() {
    let stop = Arc::new(AtomicBool::new(false));
    let leaf_sock = sock();
    let leaf = leaf_sock.local_addr().unwrap();
    let a = sock();
    let b = sock();
    let cfg = SwitchConfig {
        listen: leaf.to_string(),
        metrics: None,
        seed: 3,
        batch: 32,
        fail_replies: true,
        instances: vec![PoolConfig {
            heartbeat_timeout_ms: 100,
            ..PoolConfig::new(
                2,
                Role::Leaf,
                Policy::Horus,
                vec![a.local_addr().unwrap(), b.local_addr().unwrap()],
            )
        }],
        ..Default::default()
    };
    let mut d = SwitchDaemon::new(&cfg, leaf_sock).unwrap();
    let reg = d.registry();
    let s = stop.clone();
    let daemon = std::thread::spawn(move || d.run(&s).unwrap());
    let wcfg = |first_id| WorkerConfig {
        listen: vec![],
        first_id,
        leaf: Some(leaf),
        pool: 2,
        heartbeat_ms: 20,
        spin_us: 20,
        metrics: None,
        ..Default::default()
    };
    let wa = Worker::start(&wcfg(0), vec![a], stop.clone()).unwrap();
    // Worker 1 (socket b) stays silent: after 100 ms the leaf drops it.
    wait_for(&reg, "netsched_node_failures_total", "{kind=\"worker\"}", 1);
    wait_for(&reg, "netsched_live_nodes", "{pool=\"2\"}", 1);

    // Every task now goes to worker 0 and completes.
    let mut c = Client::bind(ClientConfig {
        targets: vec![Target {
            addr: leaf,
            weight: 1.0,
        }],
        pool: 2,
        app_id: 5,
        rate: 500.0,
        duration_ms: 400,
        service: ServiceDist::Fixed { value_us: 100.0 },
        timeout_ms: 500,
        seed: 1,
        bind: "127.0.0.1:0".into(),
        ..Default::default()
    })
    .unwrap();
    let r = c.run();
    assert!(r.accounted(), "{}", r.summary());
    assert_eq!(r.completed, r.submitted, "{}", r.summary());
    assert_eq!(
        wa.registry().sum("netsched_worker_tasks_total"),
        r.submitted
    );

    // Worker 1 starts heartbeating: it is schedulable again.
    let wb = Worker::start(&wcfg(1), vec![b], stop.clone()).unwrap();
    wait_for(
        &reg,
        "netsched_node_recoveries_total",
        "{kind=\"worker\"}",
        1,
    );
    wait_for(&reg, "netsched_live_nodes", "{pool=\"2\"}", 2);

    stop.store(true, Ordering::Relaxed);
    daemon.join().unwrap();
    wa.join();
    wb.join();
}
