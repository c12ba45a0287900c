//! A SIGKILLed worker process is declared failed at its leaf even while a
//! forger sends KeepAlives from the dead worker's own address: they carry no
//! seal (or a wrong one) and are counted and dropped, while the worker's own
//! sealed KeepAlives kept it alive until the kill.

mod common;

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use netsched_node::config::{Policy, PoolConfig, Role};
use netsched_node::metrics::Registry;
use netsched_node::secret::write_secret_file;
use netsched_node::{SwitchConfig, SwitchDaemon};
use netsched_proto::{HorusBody, HorusHeader, HorusMessage, Message};

const KEY: &str = "a0b1c2d3e4f5061728394a5b6c7d8e9fa0b1c2d3e4f5061728394a5b6c7d8e9f";

fn value(r: &Registry, name: &str, labels: &str) -> u64 {
    r.value(name, labels).unwrap_or(0)
}

fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < limit, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn forged_keep_alives_do_not_keep_a_killed_worker_alive() {
    let dir = common::temp_dir("forged-keepalive");
    let key_file = dir.join("cluster.key");
    write_secret_file(&key_file, KEY).unwrap();
    let leaf_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let leaf = leaf_sock.local_addr().unwrap();
    let exec = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let cfg = SwitchConfig {
        instances: vec![PoolConfig {
            heartbeat_timeout_ms: 300,
            ..PoolConfig::new(1, Role::Leaf, Policy::Horus, vec![exec])
        }],
        key_file: Some(key_file.clone()),
        ..Default::default()
    };
    let mut d = SwitchDaemon::new(&cfg, leaf_sock).unwrap();
    let reg = d.registry();
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let h = std::thread::spawn(move || d.run(&st).unwrap());

    let w = common::write_config(
        &dir,
        "worker.toml",
        format!(
            "listen = [\"{exec}\"]\nleaf = \"{leaf}\"\npool = 1\nheartbeat_ms = 40\nkey_file = \"{}\"\n",
            key_file.display()
        ),
    );
    let mut worker = common::Quiet::spawn(&["worker", "-c", &w]);
    let keep_alives = || value(&reg, "netsched_rx_packets_total", "{type=\"keep_alive\"}");
    let failures = || value(&reg, "netsched_node_failures_total", "{kind=\"worker\"}");
    let unsealed = || {
        value(
            &reg,
            "netsched_drops_total",
            "{by=\"runtime\",reason=\"unsealed\"}",
        )
    };
    // The worker's sealed KeepAlives arrive and are accepted.
    wait_for("the worker's keep-alives", Duration::from_secs(10), || {
        keep_alives() >= 5
    });
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(failures(), 0, "a live worker was declared failed");
    assert_eq!(unsealed(), 0);

    // SIGKILL, then KeepAlives from the dead worker's own address, 20/s.
    worker.0.kill().unwrap();
    worker.0.wait().unwrap();
    let forger = UdpSocket::bind(exec).unwrap();
    let forged = Message::Horus(HorusMessage {
        header: HorusHeader {
            pool_id: 1,
            src_id: 0,
            ..Default::default()
        },
        body: HorusBody::KeepAlive,
    })
    .to_vec()
    .unwrap();
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(1500) {
        forger.send_to(&forged, leaf).unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    let (failed, dropped) = (failures(), unsealed());
    let live = value(&reg, "netsched_live_nodes", "{pool=\"1\"}");
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    assert!(dropped >= 20, "forged keep-alives dropped: {dropped}");
    assert_eq!(failed, 1, "the killed worker was not declared failed");
    assert_eq!(live, 0, "{}", reg.render());
}
