//! One daemon, several instances: datagrams are routed by pool id, and each
//! instance keeps its own role and state.

mod common;

use std::net::UdpSocket;
use std::time::Duration;

use common::sock;
use netsched_node::config::{PolicyName, PoolConfig, Role};
use netsched_node::{SwitchConfig, SwitchDaemon};
use netsched_proto::{decode, task_id, HorusBody, HorusHeader, HorusMessage, HorusTask, Message};

fn task(pool: u16, seq: u32) -> Vec<u8> {
    Message::Horus(HorusMessage {
        header: HorusHeader {
            pool_id: pool,
            ..Default::default()
        },
        body: HorusBody::TaskFirst(HorusTask {
            task_id: task_id::new(8, seq),
            is_last: true,
            ..Default::default()
        }),
    })
    .to_vec()
    .unwrap()
}

fn recv(s: &UdpSocket) -> Option<HorusMessage<'static>> {
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut b = [0u8; 2048];
    let (n, _) = s.recv_from(&mut b).ok()?;
    let v: &'static [u8] = Box::leak(b[..n].to_vec().into_boxed_slice());
    match decode(v).unwrap() {
        Message::Horus(m) => Some(m),
        _ => None,
    }
}

#[test]
fn instances_are_selected_by_pool() {
    let rack = sock();
    let worker = sock();
    let spine_up = sock();
    let cfg = SwitchConfig {
        listen: "127.0.0.1:0".into(),
        metrics: None,
        seed: 1,
        batch: 8,
        fail_replies: true,
        instances: vec![
            PoolConfig {
                pool: 10,
                role: Role::Spine,
                policy: PolicyName::Horus,
                downstream: vec![rack.local_addr().unwrap()],
                rack_workers: vec![4],
                upstream: vec![],
                rack: 0,
                heartbeat_timeout_ms: 0,
                clients: Vec::new(),
                max_routes: netsched_node::config::DEFAULT_MAX_ROUTES,
            },
            PoolConfig {
                pool: 20,
                role: Role::Leaf,
                policy: PolicyName::Horus,
                downstream: vec![worker.local_addr().unwrap()],
                rack_workers: vec![],
                upstream: vec![spine_up.local_addr().unwrap()],
                rack: 3,
                heartbeat_timeout_ms: 0,
                clients: Vec::new(),
                max_routes: netsched_node::config::DEFAULT_MAX_ROUTES,
            },
        ],
        ..Default::default()
    };
    let mut d = SwitchDaemon::new(&cfg, sock()).unwrap();
    let client = sock().local_addr().unwrap();
    d.on_datagram(&task(10, 1), client, 1);
    d.on_datagram(&task(20, 2), client, 2);
    let at_rack = recv(&rack).expect("pool 10 task at the rack");
    assert_eq!(at_rack.header.pool_id, 10);
    assert_eq!(at_rack.task_id(), Some(task_id::new(8, 1)));
    let at_worker = recv(&worker).expect("pool 20 task at the worker");
    assert_eq!(at_worker.header.pool_id, 20);
    assert_eq!(at_worker.task_id(), Some(task_id::new(8, 2)));
    // The leaf's only worker is now busy: it tells its spine, as rack 3.
    let notice = recv(&spine_up).expect("idleRemove to the linked spine");
    assert_eq!(notice.body, HorusBody::IdleRemove);
    assert_eq!(notice.header.src_id, 3);
    assert_eq!(notice.header.pool_id, 20);
}
