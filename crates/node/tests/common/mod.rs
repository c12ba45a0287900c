//! Helpers shared by the integration tests.

#![allow(dead_code)]

use std::net::UdpSocket;

use netsched_node::cluster::{ClusterSpec, LocalCluster};
use netsched_node::config::{Policy, PoolConfig};
use netsched_node::metrics::Registry;
use netsched_node::{SwitchConfig, Worker, WorkerConfig};
use netsched_proto::{HorusMessage, HorusTask, Message};

/// Task `id` for pool `pool`, alone in its job, that runs for
/// `service_time_ns`: what a client sends first.
pub fn task_message(pool: u16, id: u64, service_time_ns: u64) -> Message<'static> {
    Message::Horus(HorusMessage::task_first(
        pool,
        HorusTask {
            task_id: id,
            is_last: true,
            service_time_ns,
            ..Default::default()
        },
    ))
}

/// The datagram of a 1 µs `task_message`.
pub fn task_datagram(pool: u16, id: u64) -> Vec<u8> {
    task_message(pool, id, 1_000).to_vec().unwrap()
}

/// A RackSched REQF (`kind` 0) or REP (any other `kind`) of request
/// `local` of client 11, with the server's LOAD `load` (a REP's).
pub fn rs_datagram(kind: u8, local: u32, load: u32) -> Vec<u8> {
    use netsched_proto::{RackSchedMessage, RackSchedPacket, ReqId};
    let p = RackSchedPacket {
        req_id: ReqId {
            client_id: 11,
            local_id: local,
        },
        load,
        is_last: true,
        class: 0,
        service_time_ns: 1_000,
        payload: b"",
    };
    let m = match kind {
        0 => RackSchedMessage::ReqFirst(p),
        _ => RackSchedMessage::Reply(p),
    };
    Message::RackSched(m).to_vec().unwrap()
}

pub fn sock() -> UdpSocket {
    UdpSocket::bind("127.0.0.1:0").expect("bind loopback")
}

/// One spine, `leaves` leaves with `execs` executors each, one policy on
/// both layers; workers heartbeat every 50 ms, leaves time them out after
/// 500 ms.
pub fn cluster(pool: u16, leaves: usize, execs: usize, policy: Policy) -> LocalCluster {
    LocalCluster::start(&ClusterSpec {
        pool,
        racks: leaves,
        executors: execs,
        spine_policy: policy,
        leaf_policy: policy,
        seed: 7,
        heartbeat_ms: 50,
        spin_us: 20,
        ..ClusterSpec::default()
    })
    .expect("cluster starts")
}

/// A daemon on an ephemeral loopback port running `instances`, seed 1,
/// handling datagrams in batches of 8.
pub fn switch_config(instances: Vec<PoolConfig>) -> SwitchConfig {
    SwitchConfig {
        seed: 1,
        batch: 8,
        instances,
        ..Default::default()
    }
}

pub fn decisions(r: &Registry, d: &str) -> u64 {
    r.value("netsched_decisions_total", &format!("{{decision=\"{d}\"}}"))
        .unwrap()
}

pub fn runtime_drop(r: &Registry, reason: &str) -> u64 {
    r.value(
        "netsched_drops_total",
        &format!("{{by=\"runtime\",reason=\"{reason}\"}}"),
    )
    .unwrap()
}

pub fn dp_drop(r: &Registry, reason: &str) -> u64 {
    r.value(
        "netsched_drops_total",
        &format!("{{by=\"dataplane\",reason=\"{reason}\"}}"),
    )
    .unwrap()
}

/// The built-in flat baselines (one scheduler over a pool's workers), from
/// the registry rather than a list of names that can fall behind it.
pub fn flat_baselines() -> Vec<Policy> {
    Policy::ALL
        .into_iter()
        .filter(|p| p.is_flat() && !matches!(p, Policy::Extra(_)))
        .collect()
}

/// A worker on a loopback port whose leaf is `leaf` (pool 1, one
/// executor, no heartbeats, so every datagram the leaf receives is a
/// reply), otherwise as `cfg`; its address and stop flag.
pub fn leaf_worker(
    leaf: std::net::SocketAddr,
    cfg: WorkerConfig,
) -> (
    Worker,
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cfg = WorkerConfig {
        listen: vec!["127.0.0.1:0".into()],
        leaf: Some(leaf),
        pool: 1,
        heartbeat_ms: 0,
        ..cfg
    };
    let w = Worker::bind(&cfg, stop.clone()).unwrap();
    let addr = w.addrs()[0];
    (w, addr, stop)
}
