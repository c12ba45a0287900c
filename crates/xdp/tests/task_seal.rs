//! The XDP leaf seals every task it forwards (bpf/seal.h `siphash24_pkt`,
//! horus_leaf.bpf.c `seal_forwarded`) exactly as the socket leaf does
//! (`netsched_proto::seal::seal_task`, which its sealer calls): for any
//! payload length up to the largest, key and counter, the frame the program
//! sends is the forwarded task followed by the seal the socket path would
//! append with the same key and sequence number, with the IPv4 and UDP
//! lengths and the IPv4 checksum fixed; and a worker's rule
//! (`seal::open_task`) accepts it. With no key the frame is unchanged in
//! length (unsealed). A multi-packet task's continuations are sealed
//! alike.
//!
//! Needs root (loading BPF programs): skipped otherwise, a failure under
//! NETSCHED_REQUIRE_BPF=1.

mod common;

use std::net::{Ipv4Addr, SocketAddrV4};

use netsched_core::horus::{ConnTableConfig, HorusLeaf, HorusOptions};
use netsched_proto::seal::{self, NoticeKey, SEAL_LEN};
use netsched_proto::{HorusBody, HorusHeader, HorusMessage, HorusTask, Message, MAX_TASK_PAYLOAD};
use netsched_xdp::{WorkerAddr, XdpAction, XdpLeaf};
use proptest::prelude::*;

use common::{horus_task as task, ipv4_checksum, SWITCH, SWITCH_MAC};

fn bpf_leaf(test: &str) -> Option<XdpLeaf> {
    common::load_program(test, "leaf", XdpLeaf::load)
}

fn worker_addr(node: u32) -> WorkerAddr {
    WorkerAddr {
        mac: [0x02, 0, 0, 0, 1, node as u8],
        ip: Ipv4Addr::new(10, 0, 1, node as u8 + 1),
        port: 9000 + node as u16,
    }
}

/// A client's task frame to the leaf.
fn frame(datagram: &[u8]) -> Vec<u8> {
    common::frame(
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 5000),
        datagram,
    )
}

/// A leaf over `workers` workers, leaving from the leaf's own address.
fn installed(xdp: &mut XdpLeaf, workers: u32) {
    let leaf = HorusLeaf::with_options(
        workers,
        7,
        ConnTableConfig::default(),
        HorusOptions::default(),
    );
    let addrs: Vec<WorkerAddr> = (0..workers).map(worker_addr).collect();
    xdp.set_source(SWITCH).expect("source");
    xdp.install(&leaf, SWITCH_MAC, &addrs).expect("install");
}

/// Runs one task through the program; checks the frame is a sealed task
/// the socket path would have sealed alike with `seq`, and returns the
/// unsealed task.
fn check_sealed(xdp: &mut XdpLeaf, key: &NoticeKey, datagram: &[u8], seq: u64) -> Vec<u8> {
    let run = xdp.test_run(&frame(datagram), 1).expect("test run");
    assert_eq!(run.action, XdpAction::Tx);
    let f = run.frame;
    let len = datagram.len();
    assert_eq!(f.len(), 42 + len + SEAL_LEN, "frame grown by the seal");
    assert_eq!(
        u16::from_be_bytes([f[16], f[17]]) as usize,
        28 + len + SEAL_LEN,
        "IPv4 total length"
    );
    assert_eq!(
        u16::from_be_bytes([f[38], f[39]]) as usize,
        8 + len + SEAL_LEN,
        "UDP length"
    );
    assert_eq!(ipv4_checksum(&f[14..34]), 0, "IPv4 checksum");
    let sealed = &f[42..];
    let plain = &sealed[..len];
    // The socket path: the same task sealed with the same key and seq.
    let mut buf = vec![0u8; len + SEAL_LEN];
    buf[..len].copy_from_slice(plain);
    let n = seal::seal_task(key, &mut buf, len, seq).expect("seal");
    assert_eq!(sealed, &buf[..n], "the program's seal is the socket path's");
    assert_eq!(seal::open_task(Some(key), sealed), Ok((plain, Some(seq))));
    // Only dst_id was rewritten in the task itself.
    let mut expect = datagram.to_vec();
    expect[6..8].copy_from_slice(&plain[6..8]);
    assert_eq!(plain, &expect[..]);
    plain.to_vec()
}

#[test]
fn the_programs_seal_is_the_socket_paths_and_off_means_unsealed() {
    let Some(mut xdp) = bpf_leaf("the_programs_seal_is_the_socket_paths_and_off_means_unsealed")
    else {
        return;
    };
    installed(&mut xdp, 4);
    let key = NoticeKey(*b"xdp-task-seal-01");
    let start = 1_790_000_000_000_000_001;
    xdp.set_task_key(Some(key.0), start).expect("key");
    for (k, payload) in [
        &b""[..],
        b"k",
        b"0123456",
        b"01234567",
        b"rocksdb-key-000042",
    ]
    .iter()
    .enumerate()
    {
        let seq = start + 2 * (k as u64 + 1);
        check_sealed(&mut xdp, &key, &task(k as u64, 4_900_000_000, payload), seq);
        assert_eq!(xdp.task_seq().expect("seq"), seq);
    }
    let biggest = vec![0xa5; MAX_TASK_PAYLOAD];
    check_sealed(&mut xdp, &key, &task(99, 1, &biggest), start + 12);
    assert_eq!(xdp.counters().expect("counters").seal_failed, 0);
    // Sealing off: forwarded as before, no trailer.
    xdp.set_task_key(None, 0).expect("key off");
    let datagram = task(100, 1_000, b"key");
    let run = xdp.test_run(&frame(&datagram), 1).expect("test run");
    assert_eq!(run.action, XdpAction::Tx);
    assert_eq!(run.frame.len(), 42 + datagram.len());
}

/// Any payload length, key and counter start (one loaded program: the
/// verifier runs once).
#[test]
fn any_task_is_sealed_as_the_socket_path_seals_it() {
    let Some(xdp) = bpf_leaf("any_task_is_sealed_as_the_socket_path_seals_it") else {
        return;
    };
    let xdp = std::cell::RefCell::new(xdp);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let cases = (
        prop::collection::vec(any::<u8>(), 0..=MAX_TASK_PAYLOAD),
        any::<[u8; 16]>(),
        any::<u64>().prop_map(|s| (s >> 2) | 1),
        any::<u64>(),
    );
    runner
        .run(&cases, |(payload, key, start, service)| {
            let mut xdp = xdp.borrow_mut();
            installed(&mut xdp, 3);
            xdp.set_task_key(Some(key), start).expect("key");
            check_sealed(
                &mut xdp,
                &NoticeKey(key),
                &task(1, service, &payload),
                start + 2,
            );
            Ok(())
        })
        .unwrap();
}

/// Cost of the seal in the program, per forwarded task: the mean of many
/// single test runs (each a fresh frame: a repeated run would see its own
/// sealed output) with sealing off and on, for a 3-byte and a 1,000-byte
/// payload. docs/benchmarks.md records it: `cargo test -p netsched-xdp
/// --test task_seal seal_cost -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn seal_cost() {
    let Some(mut xdp) = bpf_leaf("seal_cost") else {
        return;
    };
    let runs = 20_000u64;
    let mut mean = |key: Option<[u8; 16]>, payload: &[u8]| {
        installed(&mut xdp, 8);
        xdp.set_task_key(key, 1).expect("key");
        let f = frame(&task(1, 1_000, payload));
        let mut total = 0u64;
        for _ in 0..runs {
            let run = xdp.test_run(&f, 1).expect("test run");
            assert_eq!(run.action, XdpAction::Tx);
            total += u64::from(run.mean_ns);
        }
        total as f64 / runs as f64
    };
    let key = Some(*b"0123456789abcdef");
    let big = vec![7u8; 1000];
    let (off3, on3) = (mean(None, b"key"), mean(key, b"key"));
    let (off1k, on1k) = (mean(None, &big), mean(key, &big));
    println!(
        "task with a 3-byte payload: {off3:.1} ns unsealed, {on3:.1} ns sealed; \
         1,000-byte payload: {off1k:.1} ns unsealed, {on1k:.1} ns sealed ({runs} single runs each)"
    );
}

/// A multi-packet task's packets (§A.4): the first, then continuations
/// the connection table sends on, each sealed as the socket leaf seals it.
#[test]
fn every_packet_of_a_multi_packet_task_is_sealed() {
    let Some(mut xdp) = bpf_leaf("every_packet_of_a_multi_packet_task_is_sealed") else {
        return;
    };
    installed(&mut xdp, 2);
    let key = NoticeKey(*b"xdp-task-seal-02");
    let start = 1_790_000_000_000_000_001;
    xdp.set_task_key(Some(key.0), start).expect("key");
    let packet = |part: u8| {
        let task = HorusTask {
            task_id: (7 << 32) | 5,
            is_last: part == 2,
            payload: b"part",
            ..HorusTask::default()
        };
        let body = if part == 0 {
            HorusBody::TaskFirst(task)
        } else {
            HorusBody::TaskContinuation(task)
        };
        let header = HorusHeader {
            pool_id: 1,
            ..HorusHeader::default()
        };
        Message::Horus(HorusMessage { header, body })
            .to_vec()
            .expect("encode")
    };
    let sent: Vec<Vec<u8>> = (0..3u8)
        .map(|part| {
            check_sealed(
                &mut xdp,
                &key,
                &packet(part),
                start + 2 * (u64::from(part) + 1),
            )
        })
        .collect();
    // Every packet went to the first packet's worker (dst_id).
    assert!(sent.iter().all(|p| p[6..8] == sent[0][6..8]), "{sent:?}");
    assert_eq!(xdp.conn_counters().expect("counters").followed, 2);
}
