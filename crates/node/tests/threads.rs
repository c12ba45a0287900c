//! `threads > 1`: a leaf daemon on several SO_REUSEPORT sockets, one
//! receive thread each, sharing its one data plane (switch/threads.rs).

mod common;

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{decisions, sock};
use netsched_node::config::{Policy, PoolConfig, Role};
use netsched_node::{SwitchConfig, SwitchDaemon, Worker, WorkerConfig};
use netsched_proto::{task_id, HorusBody, Message};

const POOL: u16 = 3;

fn task(app: u32, seq: u32) -> Vec<u8> {
    common::task_datagram(POOL, task_id::new(app, seq))
}

#[test]
fn every_task_from_many_senders_is_answered_through_two_receive_threads() {
    let stop = Arc::new(AtomicBool::new(false));
    let wsocks = vec![sock(), sock()];
    let wcfg = WorkerConfig {
        heartbeat_ms: 0,
        ..Default::default()
    };
    let workers = Worker::start(&wcfg, wsocks, stop.clone()).unwrap();
    let cfg = SwitchConfig {
        threads: 2,
        instances: vec![PoolConfig::new(
            POOL,
            Role::Leaf,
            Policy::Horus,
            workers.addrs().to_vec(),
        )],
        ..Default::default()
    };
    let (mut d, extra) = SwitchDaemon::bind_threads(&cfg).unwrap();
    assert_eq!(extra.len(), 1);
    assert_eq!(extra[0].local_addr().unwrap(), d.local_addr());
    let leaf = d.local_addr();
    let reg = d.registry();
    let s = stop.clone();
    let daemon = std::thread::spawn(move || d.run_threaded(extra, &s));
    // 16 senders (flows the kernel spreads over both sockets), an
    // application each so each has its own reply route.
    let clients: Vec<UdpSocket> = (0..16).map(|_| sock()).collect();
    const PER_CLIENT: u32 = 20;
    for seq in 0..PER_CLIENT {
        for (app, c) in clients.iter().enumerate() {
            c.send_to(&task(100 + app as u32, seq), leaf).unwrap();
        }
    }
    let mut answered = vec![0u32; clients.len()];
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 2048];
    for (k, c) in clients.iter().enumerate() {
        c.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        while answered[k] < PER_CLIENT && Instant::now() < deadline {
            let Ok(n) = c.recv(&mut buf) else { continue };
            if let Ok(Message::Horus(m)) = Message::decode(&buf[..n]) {
                if let HorusBody::Reply(r) = m.body {
                    assert_eq!(task_id::app_id(r.task_id), 100 + k as u32);
                    answered[k] += 1;
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    daemon.join().unwrap().unwrap();
    workers.join();
    assert_eq!(answered, vec![PER_CLIENT; clients.len()]);
    let all = u64::from(PER_CLIENT) * clients.len() as u64;
    let dispatched: u64 = ["idle", "sampled", "other"]
        .iter()
        .map(|k| decisions(&reg, k))
        .sum();
    assert_eq!(dispatched, all);
    // The runtime dropped nothing. (The leaf's data plane may count
    // `overflow` drops of idle-list entries under this burst, one thread
    // or two: a list of 2w full of stale entries, Horus leaf; no task.)
    let runtime_drops: u64 = netsched_node::switch::RuntimeDrop::ALL
        .iter()
        .map(|r| common::runtime_drop(&reg, r.name()))
        .sum();
    assert_eq!(runtime_drops, 0, "{}", reg.render());
    assert_eq!(
        reg.value("netsched_tx_packets_total", "{type=\"reply\"}"),
        Some(all)
    );
}

#[test]
fn threads_are_refused_for_the_xdp_datapath_and_zero() {
    let zero = SwitchConfig {
        threads: 0,
        ..Default::default()
    };
    assert!(zero.validate().is_err());
    let toml =
        "listen = \"10.0.0.1:7000\"\nthreads = 2\ndatapath = \"xdp\"\n[xdp]\ninterface = \"lo\"\n";
    let err = SwitchConfig::from_toml(toml).unwrap_err().to_string();
    assert!(err.contains("threads"), "{err}");
}
