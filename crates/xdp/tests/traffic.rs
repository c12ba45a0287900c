//! The benchmark's XDP responder (bpf/traffic.bpf.c) on single frames
//! through BPF_PROG_TEST_RUN: a task becomes its worker's idle reply, sent
//! back with the addresses turned around and the send stamp kept; that
//! reply, arriving at the client, completes the task and is dropped; other
//! frames pass. And the generator writes its whole frame over what a
//! recycled live frame held. Needs root (NETSCHED_REQUIRE_BPF=1: fail
//! instead of skip).

mod common;

use std::net::{Ipv4Addr, SocketAddrV4};

use netsched_proto::{
    decode, HorusBody, HorusHeader, HorusMessage, HorusTask, Message, ReplyStatus,
};
use netsched_xdp::traffic::{Traffic, GEN_FRAME_BYTES, STAMP_BYTES};
use netsched_xdp::XdpAction;

#[test]
fn a_task_becomes_its_idle_reply_and_the_reply_completes_it() {
    let test = "a_task_becomes_its_idle_reply_and_the_reply_completes_it";
    let Some(mut traffic) = common::load_program(test, "responder", Traffic::load) else {
        return;
    };
    let stamp = 42u64.to_ne_bytes();
    let task = Message::Horus(HorusMessage {
        header: HorusHeader {
            pool_id: 1,
            dst_id: 3,
            ..HorusHeader::default()
        },
        body: HorusBody::TaskFirst(HorusTask {
            task_id: (7 << 32) | 9,
            is_last: true,
            payload: &stamp,
            ..HorusTask::default()
        }),
    })
    .to_vec()
    .expect("encode");
    let leaf = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 254), 7000);
    let worker = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 3), 7201);
    let run = traffic
        .respond_once(&common::frame_to(leaf, worker, &task))
        .expect("test run");
    assert_eq!(run.action, XdpAction::Tx);
    let reply = &run.frame;
    assert_eq!(reply[30..34], leaf.ip().octets(), "back to the leaf");
    assert_eq!(reply[26..30], worker.ip().octets(), "from the worker");
    assert_eq!(reply[34..36], worker.port().to_be_bytes());
    assert_eq!(reply[36..38], leaf.port().to_be_bytes());
    assert_eq!(common::ipv4_checksum(&reply[14..34]), 0, "IPv4 checksum");
    match decode(&reply[42..]).expect("a netsched datagram") {
        Message::Horus(HorusMessage {
            header,
            body: HorusBody::Reply(r),
        }) => {
            assert_eq!((header.src_id, header.qlen), (3, 0), "worker 3, idle");
            assert_eq!(r.task_id, (7 << 32) | 9);
            assert_eq!(r.status, ReplyStatus::Ok);
            assert_eq!(r.payload, stamp, "the stamp goes back");
        }
        other => panic!("answered {other:?}"),
    }
    assert_eq!(traffic.stats().expect("stats").answered, 1);
    // The reply at the client: completed (its latency is the clock since
    // the stamp, which 42 ns after boot makes long) and dropped.
    let back = traffic.respond_once(reply).expect("test run");
    assert_eq!(back.action, XdpAction::Drop);
    let stats = traffic.stats().expect("stats");
    assert_eq!(stats.completed, 1);
    assert_eq!(stats.histogram.iter().sum::<u64>(), 1);
    // Anything else goes up to the stack.
    let other = traffic
        .respond_once(&common::frame_to(leaf, worker, b"not netsched"))
        .expect("test run");
    assert_eq!(other.action, XdpAction::Pass);
}

/// A live frame's page is recycled holding what it last carried: over
/// veths the leaf and the responder rewrite the very page the generator
/// sent, into a reply trimmed by 9 bytes. The generator must send its task,
/// whole and at its length, whatever the page held: before it wrote only
/// the stamp, and the leaf took the stale reply as one of its workers'.
/// The generator's task in its frame, from the client to the leaf.
fn generator_frame() -> Vec<u8> {
    let task = netsched_xdp::traffic::generator_task();
    let client = SocketAddrV4::new(Ipv4Addr::new(10, 0, 1, 1), 6000);
    let leaf = SocketAddrV4::new(Ipv4Addr::new(10, 0, 1, 2), 7101);
    common::frame_to(client, leaf, &task)
}

#[test]
fn the_generator_writes_its_whole_task_over_a_recycled_reply() {
    let test = "the_generator_writes_its_whole_task_over_a_recycled_reply";
    let Some(mut traffic) = common::load_program(test, "gen_tx", Traffic::load) else {
        return;
    };
    let frame = generator_frame();
    assert_eq!(frame.len(), GEN_FRAME_BYTES);
    // What the page held: the responder's reply to this task (shorter),
    // then leftovers, to the length a run is given (one byte more).
    let mut page = traffic.respond_once(&frame).expect("test run").frame;
    assert!(page.len() < GEN_FRAME_BYTES);
    page.resize(GEN_FRAME_BYTES + 1, 0xee);
    let run = traffic.generate_once(&frame, &page).expect("test run");
    assert_eq!(run.action, XdpAction::Tx);
    let stamp_at = GEN_FRAME_BYTES - STAMP_BYTES;
    assert_eq!(run.frame.len(), GEN_FRAME_BYTES, "trimmed to the task");
    assert_eq!(run.frame[..stamp_at], frame[..stamp_at], "the task, whole");
    assert_ne!(run.frame[stamp_at..], [0; STAMP_BYTES], "stamped");
}

/// The path's floor (`xdp-floor-live`) sends a task and a reply back out
/// where they came in, by a redirect, unchanged: what reaches the responder
/// is what the leaf would send it, less the scheduling.
#[test]
fn the_floor_sends_every_frame_back_unchanged() {
    let test = "the_floor_sends_every_frame_back_unchanged";
    let Some(mut traffic) = common::load_program(test, "path_floor", Traffic::load) else {
        return;
    };
    let frame = generator_frame();
    let reply = traffic.respond_once(&frame).expect("test run").frame;
    for f in [&frame, &reply] {
        let run = traffic.floor_once(f).expect("test run");
        assert_eq!(run.action, XdpAction::Redirect);
        assert_eq!(&run.frame, f);
    }
}
