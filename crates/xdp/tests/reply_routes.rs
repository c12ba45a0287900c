//! The XDP leaf's reply routes (bpf/horus_core.h `learn_reply_route`): an
//! application's replies go back to where its latest task came from, its
//! IPv4 address, its port and its Ethernet address each followed on its own
//! (the socket daemon answers the datagram's source; a client that moved
//! gets its replies where it is now).
//!
//! Needs root (loading BPF programs). Without it the test prints why and
//! passes, unless NETSCHED_REQUIRE_BPF=1.

mod common;

use std::net::{Ipv4Addr, SocketAddrV4};

use netsched_core::horus::{ConnTableConfig, HorusLeaf};
use netsched_proto::{HorusBody, HorusHeader, HorusMessage, HorusReply, Message, ReplyStatus};
use netsched_xdp::{WorkerAddr, XdpAction, XdpLeaf};

const WORKERS: u32 = 2;

fn worker(n: u32) -> WorkerAddr {
    WorkerAddr {
        mac: [2, 0, 0, 0, 1, n as u8],
        ip: Ipv4Addr::new(10, 0, 1, n as u8 + 1),
        port: 9000,
    }
}

/// Task `id` of application `app` (the task id's upper half) from `from`
/// at `mac`; returns the worker it went to.
fn task_from(xdp: &mut XdpLeaf, mac: [u8; 6], from: SocketAddrV4, app: u32, id: u32) -> u32 {
    let task_id = (u64::from(app) << 32) | u64::from(id);
    let frame = common::frame_from_mac(
        mac,
        from,
        common::SWITCH,
        &common::horus_task(task_id, 0, b"key"),
    );
    let run = xdp.test_run(&frame, 1).expect("test run");
    assert_eq!(run.action, XdpAction::Tx, "the task is sent on");
    let sent = common::sent(&run.frame).expect("a well-formed frame");
    (0..WORKERS)
        .find(|&n| *sent.to.ip() == worker(n).ip)
        .expect("sent to a worker")
}

/// The reply of worker `node` to task `id` of `app`: where the program
/// sends it (destination MAC and address).
fn reply_to(xdp: &mut XdpLeaf, node: u32, app: u32, id: u32) -> ([u8; 6], SocketAddrV4) {
    let w = worker(node);
    let reply = Message::Horus(HorusMessage {
        header: HorusHeader {
            pool_id: 1,
            src_id: node as u16,
            qlen: 0,
            ..HorusHeader::default()
        },
        body: HorusBody::Reply(HorusReply {
            task_id: (u64::from(app) << 32) | u64::from(id),
            status: ReplyStatus::Ok,
            payload: b"value",
        }),
    });
    let frame = common::frame_from_mac(
        w.mac,
        SocketAddrV4::new(w.ip, w.port),
        common::SWITCH,
        &reply.to_vec().expect("encode"),
    );
    let run = xdp.test_run(&frame, 1).expect("test run");
    assert_eq!(run.action, XdpAction::Tx, "the reply goes on to its client");
    let sent = common::sent(&run.frame).expect("a well-formed frame");
    assert_eq!(sent.from, common::SWITCH, "from the leaf's source address");
    (sent.dst_mac, sent.to)
}

#[test]
fn replies_follow_the_address_port_and_mac_of_the_applications_latest_task() {
    let test = "replies_follow_the_address_port_and_mac_of_the_applications_latest_task";
    let Some(mut xdp) = common::load_program(test, "leaf", XdpLeaf::load) else {
        return;
    };
    let leaf = HorusLeaf::new(WORKERS, 7, ConnTableConfig::default());
    let addrs: Vec<WorkerAddr> = (0..WORKERS).map(worker).collect();
    xdp.install(&leaf, common::SWITCH_MAC, &addrs)
        .expect("install");
    xdp.set_source(common::SWITCH).expect("source");
    xdp.set_reply_forwarding(true).expect("reply forwarding");
    let app = 5;
    let client = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 5000);
    let mac = common::mac_of(client);
    // Each step moves one of the three; the reply must follow it.
    let moved_port = SocketAddrV4::new(*client.ip(), 5001);
    let moved_ip = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 5001);
    let moved_mac = [2, 0, 0, 0, 9, 9];
    let steps = [
        (mac, client),
        (mac, moved_port),
        (mac, moved_ip),
        (moved_mac, moved_ip),
    ];
    for (id, (mac, from)) in steps.into_iter().enumerate() {
        let node = task_from(&mut xdp, mac, from, app, id as u32);
        assert_eq!(
            xdp.reply_route(app).expect("route"),
            Some(from),
            "step {id}"
        );
        assert_eq!(
            reply_to(&mut xdp, node, app, id as u32),
            (mac, from),
            "step {id}"
        );
    }
    // Another application's route is its own.
    let other = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 3), 6000);
    let node = task_from(&mut xdp, common::mac_of(other), other, app + 1, 9);
    assert_eq!(
        reply_to(&mut xdp, node, app + 1, 9),
        (common::mac_of(other), other)
    );
    assert_eq!(xdp.reply_route(app).expect("route"), Some(moved_ip));
}
