//! Helpers shared by the integration tests.

#![allow(dead_code)]

use std::net::UdpSocket;

use netsched_node::cluster::{ClusterSpec, LocalCluster};
use netsched_node::config::{Policy, PoolConfig};
use netsched_node::metrics::Registry;
use netsched_node::SwitchConfig;

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
