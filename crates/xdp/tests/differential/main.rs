//! The same packets through the sans-IO HorusLeaf (crates/core) and through
//! the XDP leaf (BPF_PROG_TEST_RUN): the same decisions, notices, counters,
//! register arrays (map contents against `peek`), connection table (§A.4,
//! cell for cell) and random stream. Multi-packet tasks (a first packet
//! without isLastPacket, continuations, strangers' continuations) run
//! beside single-packet ones on a small table, so entries collide,
//! overflow and expire. With
//! reply forwarding on, a reply's way on (to its application's client, from
//! the program, or passed up to the daemon) is checked against the daemon's
//! rule: the route of the application's last dispatched task, for a reply
//! from the worker's registered address.
//!
//! Needs root (loading BPF programs). Without it the tests print why and
//! pass, unless NETSCHED_REQUIRE_BPF=1 (scripts/test.sh, CI), which makes
//! them fail instead.

#[path = "../common/mod.rs"]
mod common;
mod every_cpu;

use netsched_core::Nanos;
use std::net::{Ipv4Addr, SocketAddrV4};

use common::{ipv4_checksum, SWITCH, SWITCH_MAC};
use netsched_core::horus::{ConnTableConfig, HorusLeaf, HorusOptions};
use netsched_core::{
    Action, DataPlane, Dispatch, DropReason, Input, NodeId, Notice, Outbox, Resubmit, TaskMeta,
};
use netsched_proto::{
    HorusBody, HorusHeader, HorusMessage, HorusReply, HorusTask, Message, ReplyStatus,
};
use netsched_xdp::{forwarded_to, ConnCounters, WorkerAddr, XdpAction, XdpError, XdpLeaf};
use proptest::prelude::*;

const LEAF_MAC: [u8; 6] = SWITCH_MAC;
const CLIENT_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0xc1];
const LEAF_IP: Ipv4Addr = *SWITCH.ip();
const LEAF_PORT: u16 = SWITCH.port();
const SEED: u64 = 0x5eed;

/// The connection table of the tests: small, so that entries collide and
/// overflow, and short-lived, so that they expire between packets.
const CONN: ConnTableConfig = ConnTableConfig {
    stages: 2,
    slots_per_stage: 4,
    timeout_ns: 8_000,
};

/// A packet arriving at the leaf.
#[derive(Clone, Copy, Debug)]
enum Event {
    /// A single-packet task (TaskFirst with isLastPacket).
    Task {
        idle_selected: bool,
    },
    /// The first packet of multi-packet task `conn` (no isLastPacket).
    First {
        conn: u8,
        idle_selected: bool,
    },
    /// A TaskContinuation of task `conn`, isLastPacket set with `last`.
    Cont {
        conn: u8,
        last: bool,
    },
    Reply {
        node: NodeId,
        qlen: u16,
    },
}

/// What the leaf did with one packet, all passes included.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Dispatched(NodeId),
    /// A reply that updated state and goes on to its client from the
    /// daemon (passed up).
    ReplyPassed,
    /// A reply that updated state and the program sent on to client `.0`.
    ReplyForwarded(u8),
    Dropped,
}

/// How the packets of a run are made and the leaf configured: `forwarding`
/// sets the leaf's source address and turns reply forwarding on, and the
/// packets then vary their application, client and (for replies) source
/// port, so that routes move and some replies come from where their worker
/// is not registered.
#[derive(Clone, Copy, Debug)]
struct Mode {
    forwarding: bool,
    /// The leaf announces itself idle while more than this many workers
    /// are (`HorusOptions::leaf_idle_threshold`; 0 in the paper).
    idle_threshold: u32,
}

const PLAIN: Mode = Mode {
    forwarding: false,
    idle_threshold: 0,
};
const FORWARDING: Mode = Mode {
    forwarding: true,
    idle_threshold: 0,
};

impl Mode {
    /// The application a packet is of: task_id's upper half.
    fn app(self, event: Event, seq: u16) -> u32 {
        match (self.forwarding, event) {
            (false, _) => 0,
            (true, Event::Task { .. }) => u32::from(seq % 3),
            (true, Event::First { conn, .. } | Event::Cont { conn, .. }) => u32::from(conn % 3),
            // Application 3 never sends a task: its replies have no route.
            (true, Event::Reply { .. }) => u32::from(seq % 4),
        }
    }

    /// The client a task comes from: an application moves between clients.
    fn client(self, seq: u16) -> u8 {
        if self.forwarding {
            ((seq % 3 + (seq / 7) % 2) % 3) as u8
        } else {
            0
        }
    }

    /// A reply from a port its worker is not registered at.
    fn forged(self, seq: u16) -> bool {
        self.forwarding && seq % 5 == 4
    }

    /// A multi-packet task's id is its `conn`'s (above any `seq`).
    fn task_id(self, event: Event, seq: u16) -> u64 {
        let low = match event {
            Event::First { conn, .. } | Event::Cont { conn, .. } => 0x1_0000 | u64::from(conn),
            _ => u64::from(seq),
        };
        (u64::from(self.app(event, seq)) << 32) | low
    }

    /// The spine a task came from as the socket daemon numbers it: its
    /// source's position in [`UPSTREAMS`], 0 when not there.
    fn upstream(self, seq: u16) -> u32 {
        let (_, ip, port) = client_addr(self.client(seq));
        let from = std::net::SocketAddr::V4(SocketAddrV4::new(ip, port));
        upstreams()
            .iter()
            .position(|a| *a == from)
            .map_or(0, |i| i as u32)
    }
}

/// The leaf's upstream spines: clients 1 and 0 (client 2 is none).
fn upstreams() -> [std::net::SocketAddr; 2] {
    [1, 0].map(|c| {
        let (_, ip, port) = client_addr(c);
        std::net::SocketAddr::V4(SocketAddrV4::new(ip, port))
    })
}

/// Client `c`'s Ethernet and UDP address (client 0 is CLIENT_MAC, 10.0.0.1).
fn client_addr(c: u8) -> ([u8; 6], Ipv4Addr, u16) {
    let mut mac = CLIENT_MAC;
    mac[5] += c;
    (mac, Ipv4Addr::new(10, 0, 0, 1 + c), 5000 + u16::from(c))
}

fn worker_addr(node: u32) -> WorkerAddr {
    WorkerAddr {
        mac: [0x02, 0, 0, 0, 1, node as u8],
        ip: Ipv4Addr::new(10, 0, 1, node as u8 + 1),
        port: 9000 + node as u16,
    }
}

fn bpf_leaf(test: &str) -> Option<XdpLeaf> {
    common::load_program(test, "leaf", XdpLeaf::load)
}

/// Ethernet + IPv4 + UDP around a netsched datagram, as a client or worker
/// sends it to the leaf.
fn frame(src_mac: [u8; 6], src_ip: Ipv4Addr, src_port: u16, payload: &[u8]) -> Vec<u8> {
    common::frame_from_mac(
        src_mac,
        SocketAddrV4::new(src_ip, src_port),
        SWITCH,
        payload,
    )
}

fn packet(mode: Mode, event: Event, seq: u16) -> Vec<u8> {
    let task_id = mode.task_id(event, seq);
    let task = |is_last, idle_selected| HorusTask {
        task_id,
        is_last,
        idle_selected,
        payload: b"key",
        ..HorusTask::default()
    };
    let body = match event {
        Event::Task { idle_selected } => HorusBody::TaskFirst(task(true, idle_selected)),
        Event::First { idle_selected, .. } => HorusBody::TaskFirst(task(false, idle_selected)),
        Event::Cont { last, .. } => HorusBody::TaskContinuation(task(last, false)),
        Event::Reply { .. } => HorusBody::Reply(HorusReply {
            task_id,
            status: ReplyStatus::Ok,
            payload: b"value",
        }),
    };
    let (src_id, qlen) = match event {
        Event::Reply { node, qlen } => (node as u16, qlen),
        _ => (0, 0),
    };
    let message = Message::Horus(HorusMessage {
        header: HorusHeader {
            pool_id: 1,
            src_id,
            qlen,
            seq,
            ..HorusHeader::default()
        },
        body,
    });
    let datagram = message.to_vec().expect("encode");
    match event {
        Event::Reply { node, .. } => {
            let w = worker_addr(node);
            let port = w.port + u16::from(mode.forged(seq));
            frame(w.mac, w.ip, port, &datagram)
        }
        _ => {
            let (mac, ip, port) = client_addr(mode.client(seq));
            frame(mac, ip, port, &datagram)
        }
    }
}

/// What a sequence exercised, to show that a test reached each path.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    pow2_resubmissions: u64,
    retries: u64,
    relists: u64,
    idle_adds: u64,
    idle_removes: u64,
    load_updates: u64,
    /// Continuations sent where their first packet went, and dropped for
    /// want of an entry (the program's [`ConnCounters`]).
    conn: ConnCounters,
}

/// The sans-IO leaf, resubmissions run at once as the drivers run them.
fn reference(
    leaf: &mut HorusLeaf,
    mode: Mode,
    now: u64,
    event: Event,
    seq: u16,
    tally: &mut Tally,
) -> (Outcome, Vec<Notice>) {
    let task = |first, last, idle_selected| {
        Input::Task(TaskMeta {
            id: mode.task_id(event, seq),
            first,
            last,
            idle_selected,
            upstream: mode.upstream(seq),
            class: 0,
        })
    };
    let input = match event {
        Event::Task { idle_selected } => task(true, true, idle_selected),
        Event::First { idle_selected, .. } => task(true, false, idle_selected),
        Event::Cont { last, .. } => task(false, last, false),
        Event::Reply { node, qlen } => Input::Reply {
            node,
            qlen: u32::from(qlen),
            class: 0,
            task: u64::from(seq),
        },
    };
    let mut outcome = match event {
        Event::Reply { .. } => Outcome::ReplyPassed,
        _ => Outcome::Dropped,
    };
    let mut notices = Vec::new();
    let mut pending = vec![input];
    while let Some(input) = pending.pop() {
        let mut out = Outbox::new();
        leaf.handle(Nanos::new(now), input, &mut out);
        for action in out.drain() {
            match action {
                Action::Dispatch(Dispatch { node, .. }) => outcome = Outcome::Dispatched(node),
                Action::Notify { notice, .. } => {
                    match notice {
                        Notice::IdleAdd => tally.idle_adds += 1,
                        Notice::IdleRemove => tally.idle_removes += 1,
                        Notice::LoadUpdate(_) => tally.load_updates += 1,
                        Notice::SlotAdd => unreachable!("no slot tokens"),
                    }
                    notices.push(notice)
                }
                Action::Resubmit(r) => {
                    match r {
                        Resubmit::Pow2 { .. } => tally.pow2_resubmissions += 1,
                        Resubmit::Retry { .. } => tally.retries += 1,
                        Resubmit::Relist { .. } => tally.relists += 1,
                        other => unreachable!("a leaf never resubmits {other:?}"),
                    }
                    pending.insert(0, Input::Resubmit(r))
                }
                // A full idle list drops the listing, not the reply.
                Action::Drop(DropReason::Overflow) => {}
                Action::Drop(reason) => {
                    tally.conn.drop_no_affinity += u64::from(reason == DropReason::NoAffinity);
                    outcome = Outcome::Dropped
                }
                Action::Queued => unreachable!("a Horus leaf never queues"),
            }
        }
    }
    if let Event::Cont { .. } = event {
        tally.conn.followed += u64::from(matches!(outcome, Outcome::Dispatched(_)));
    }
    (outcome, notices)
}

fn through_xdp(
    xdp: &mut XdpLeaf,
    mode: Mode,
    now: u64,
    event: Event,
    seq: u16,
) -> (Outcome, Vec<Notice>) {
    xdp.set_clock(Nanos::new(now)).expect("clock");
    let run = xdp
        .test_run(&packet(mode, event, seq), 1)
        .expect("test run");
    let outcome = match (event, run.action) {
        (Event::Reply { .. }, XdpAction::Pass) => Outcome::ReplyPassed,
        (Event::Reply { .. }, XdpAction::Tx) => {
            Outcome::ReplyForwarded(check_reply_forwarded(&run.frame, mode, event, seq))
        }
        (_, XdpAction::Tx) => {
            let node = forwarded_to(&run.frame).expect("forwarded frame");
            check_forwarded(&run.frame, node, mode, event, seq);
            Outcome::Dispatched(node)
        }
        (_, XdpAction::Drop) => Outcome::Dropped,
        (event, action) => panic!("{event:?} came out as {action:?}"),
    };
    (outcome, xdp.drain_notices().expect("notices"))
}

/// A forwarded task is addressed to its worker and still a valid datagram,
/// the packet it was (its type, id and isLastPacket); it leaves from the
/// leaf's address when the leaf has one.
fn check_forwarded(frame: &[u8], node: NodeId, mode: Mode, event: Event, seq: u16) {
    let w = worker_addr(node);
    assert_eq!(frame[0..6], w.mac, "destination MAC");
    assert_eq!(frame[6..12], LEAF_MAC, "source MAC");
    assert_eq!(ipv4_checksum(&frame[14..34]), 0, "IPv4 checksum");
    let (_, client_ip, client_port) = client_addr(mode.client(seq));
    let (ip, port) = if mode.forwarding {
        (LEAF_IP, LEAF_PORT)
    } else {
        (client_ip, client_port)
    };
    assert_eq!(frame[26..30], ip.octets(), "source IP");
    assert_eq!(frame[34..36], port.to_be_bytes(), "source port");
    assert_eq!(frame[30..34], w.ip.octets(), "destination IP");
    assert_eq!(frame[36..38], w.port.to_be_bytes(), "destination port");
    match netsched_proto::decode(&frame[42..]).expect("netsched datagram") {
        Message::Horus(m) => {
            assert_eq!(u32::from(m.header.dst_id), node);
            let (first, t) = match m.body {
                HorusBody::TaskFirst(t) => (true, t),
                HorusBody::TaskContinuation(t) => (false, t),
                other => panic!("forwarded {other:?}"),
            };
            let (want_first, want_last) = match event {
                Event::First { .. } => (true, false),
                Event::Cont { last, .. } => (false, last),
                _ => (true, true),
            };
            assert_eq!((first, t.is_last), (want_first, want_last), "{event:?}");
            assert_eq!(t.task_id, mode.task_id(event, seq));
        }
        other => panic!("forwarded {other:?}"),
    }
}

/// A reply the program sent on: from the leaf's address to one client's,
/// Ethernet and UDP, a valid datagram carrying the worker's reply. Returns
/// the client.
fn check_reply_forwarded(frame: &[u8], mode: Mode, event: Event, seq: u16) -> u8 {
    let client = frame[33].wrapping_sub(1);
    let (mac, ip, port) = client_addr(client);
    assert_eq!(frame[0..6], mac, "destination MAC");
    assert_eq!(frame[6..12], LEAF_MAC, "source MAC");
    assert_eq!(ipv4_checksum(&frame[14..34]), 0, "IPv4 checksum");
    assert_eq!(frame[26..30], LEAF_IP.octets(), "source IP");
    assert_eq!(frame[30..34], ip.octets(), "destination IP");
    assert_eq!(frame[34..36], LEAF_PORT.to_be_bytes(), "source port");
    assert_eq!(frame[36..38], port.to_be_bytes(), "destination port");
    assert_eq!(frame[40..42], [0, 0], "no UDP checksum");
    match netsched_proto::decode(&frame[42..]).expect("netsched datagram") {
        Message::Horus(HorusMessage {
            body: HorusBody::Reply(r),
            ..
        }) => {
            assert_eq!(r.task_id, mode.task_id(event, seq));
            assert_eq!(r.payload, b"value");
        }
        other => panic!("forwarded {other:?} as a reply"),
    }
    client
}
/// A fresh sans-IO leaf of `workers` with the paper's options and the
/// tests' connection table, installed into `xdp` (its start-up notices
/// drained).
fn installed_leaf(xdp: &mut XdpLeaf, workers: u32) -> HorusLeaf {
    installed_leaf_with(xdp, workers, HorusOptions::default())
}

fn installed_leaf_with(xdp: &mut XdpLeaf, workers: u32, options: HorusOptions) -> HorusLeaf {
    let leaf = HorusLeaf::with_options(workers, SEED, CONN, options);
    let addrs: Vec<WorkerAddr> = (0..workers).map(worker_addr).collect();
    xdp.install(&leaf, LEAF_MAC, &addrs).expect("install");
    xdp.drain_notices().expect("notices");
    leaf
}

/// Every register array, the connection table and the random stream agree.
fn assert_same_state(leaf: &HorusLeaf, xdp: &mut XdpLeaf, step: usize) {
    let table: Vec<_> = leaf.conn_table().cells().copied().collect();
    let cells = xdp.conn_entries().expect("connection table");
    assert_eq!(cells, table, "connection table after packet {step}");
    let xdp_rng = xdp.rng_state().expect("rng");
    common::assert_same_registers(
        leaf.registers(),
        leaf.rng_state(),
        |array, len| xdp.read_array(array, len),
        xdp_rng,
        step,
    );
}

/// Runs `events` (with the clock gaps) through both leaves and compares
/// after every packet.
fn differential(xdp: &mut XdpLeaf, workers: u32, events: &[(u64, Event)]) -> Tally {
    differential_in(xdp, PLAIN, workers, events)
}

/// [`differential`] in `mode`. The reference's reply routing is the
/// daemon's (crates/node/src/switch/xdp.rs): a reply the leaf took goes to
/// the client of its application's last dispatched task, when it came from
/// its worker's registered address and such a task exists.
fn differential_in(xdp: &mut XdpLeaf, mode: Mode, workers: u32, events: &[(u64, Event)]) -> Tally {
    if mode.forwarding {
        let source = std::net::SocketAddrV4::new(LEAF_IP, LEAF_PORT);
        xdp.set_source(source).expect("source");
    }
    xdp.set_reply_forwarding(mode.forwarding)
        .expect("reply forwarding");
    xdp.set_upstreams(&upstreams()).expect("upstreams");
    let mut routes = std::collections::BTreeMap::new();
    let options = HorusOptions {
        leaf_idle_threshold: mode.idle_threshold,
        ..HorusOptions::default()
    };
    let mut leaf = installed_leaf_with(xdp, workers, options);
    assert_same_state(&leaf, xdp, 0);
    let start = xdp.counters().expect("counters");
    let conn_start = xdp.conn_counters().expect("counters");
    let mut now = 1_000;
    let mut tally = Tally::default();
    for (step, &(gap, event)) in events.iter().enumerate() {
        now += gap;
        let seq = step as u16;
        let mut expected = reference(&mut leaf, mode, now, event, seq, &mut tally);
        let app = mode.app(event, seq);
        match expected.0 {
            Outcome::Dispatched(_) => {
                routes.insert(app, mode.client(seq));
            }
            Outcome::ReplyPassed if mode.forwarding && !mode.forged(seq) => {
                if let Some(&client) = routes.get(&app) {
                    expected.0 = Outcome::ReplyForwarded(client);
                }
            }
            _ => {}
        }
        let got = through_xdp(xdp, mode, now, event, seq);
        assert_eq!(got, expected, "packet {step}: {event:?}");
        assert_same_state(&leaf, xdp, step + 1);
    }
    assert_same_counters(xdp, &start, &leaf);
    let conn = xdp.conn_counters().expect("counters");
    let expected = ConnCounters {
        overflows: leaf.conn_table().overflows,
        ..tally.conn
    };
    let got = ConnCounters {
        followed: conn.followed - conn_start.followed,
        drop_no_affinity: conn.drop_no_affinity - conn_start.drop_no_affinity,
        overflows: conn.overflows - conn_start.overflows,
    };
    assert_eq!(got, expected, "connection table counters");
    tally
}

/// The program's counters since `start` against the sans-IO leaf's.
fn assert_same_counters(xdp: &mut XdpLeaf, start: &netsched_xdp::XdpCounters, leaf: &HorusLeaf) {
    let end = xdp.counters().expect("counters");
    let reference = leaf.counters();
    assert_eq!(
        end.stale_idle_entries - start.stale_idle_entries,
        reference.stale_idle_entries
    );
    assert_eq!(
        end.relisted_after_reorder - start.relisted_after_reorder,
        reference.relisted_after_reorder
    );
    assert_eq!(
        end.forgotten_lost - start.forgotten_lost,
        reference.forgotten_lost
    );
}

#[test]
fn replies_go_on_to_their_applications_clients_from_the_program() {
    let test = "replies_go_on_to_their_applications_clients_from_the_program";
    let Some(mut xdp) = bpf_leaf(test) else {
        return;
    };
    // Tasks of three applications from three clients (an application
    // moving between them), replies of four applications (one never sent a
    // task) from registered and unregistered ports, and from a non-worker.
    let mut rng = netsched_core::rng::Rng::new(7);
    let events: Vec<(u64, Event)> = (0..600)
        .map(|_| {
            let event = if rng.below(2) == 0 {
                Event::Task {
                    idle_selected: rng.below(4) == 0,
                }
            } else {
                Event::Reply {
                    node: rng.below(5),
                    qlen: rng.below(4) as u16,
                }
            };
            (1 + u64::from(rng.below(1_000)), event)
        })
        .collect();
    let start = xdp.counters().expect("counters");
    differential_in(&mut xdp, FORWARDING, 4, &events);
    let c = xdp.counters().expect("counters");
    let (replies, forwarded) = (
        c.replies - start.replies,
        c.replies_forwarded - start.replies_forwarded,
    );
    // Every way a reply can take was taken.
    assert!(forwarded > 0 && forwarded < replies, "{c:?}");
    assert!(c.drop_unknown_node > 0, "{c:?}");
}

#[test]
fn idle_workers_first_then_power_of_two_with_notices() {
    let Some(mut xdp) = bpf_leaf("idle_workers_first_then_power_of_two_with_notices") else {
        return;
    };
    let task = Event::Task {
        idle_selected: false,
    };
    // Four idle workers take the first four tasks (Alg. 1), the fifth
    // empties the list (idleRemove) and the rest go by power-of-2, raising
    // the rack average past one task per worker (loadUpdate).
    let mut events: Vec<(u64, Event)> = vec![(100, task); 12];
    events.extend((0..4).map(|n| (100, Event::Reply { node: n, qlen: 2 })));
    events.extend((0..4).map(|n| (100, Event::Reply { node: n, qlen: 0 })));
    events.push((100, task));
    differential(&mut xdp, 4, &events);
    let c = xdp.counters().expect("counters");
    assert_eq!(c.dispatch_idle, 5, "{c:?}");
    assert_eq!(c.dispatch_sampled, 8, "{c:?}");
}

/// §A.4: continuations go where their first packet went, the last one
/// removes the entry, a stranger's is dropped, and an entry past the
/// timeout is missed by a lookup but, not overwritten, still taken by the
/// last packet's remove (the sans-IO table's rule).
#[test]
fn continuations_follow_their_first_packets_worker() {
    let Some(mut xdp) = bpf_leaf("continuations_follow_their_first_packets_worker") else {
        return;
    };
    let first = |conn| Event::First {
        conn,
        idle_selected: false,
    };
    let cont = |conn, last| Event::Cont { conn, last };
    let events = [
        (10, first(0)),
        (10, first(1)),
        (10, cont(0, false)),
        (10, cont(1, false)),
        (10, cont(1, true)),
        // Task 1 is done: its next packet is a stranger's.
        (10, cont(1, false)),
        (10, cont(5, true)),
        // Past the timeout task 0's entry is missed, then removed.
        (CONN.timeout_ns + 1, cont(0, false)),
        (10, cont(0, true)),
        (10, cont(0, true)),
        // An entry exactly the timeout old is still live.
        (10, first(2)),
        (CONN.timeout_ns, cont(2, false)),
        (10, cont(2, true)),
    ];
    let start = xdp.conn_counters().expect("counters");
    let tally = differential(&mut xdp, 2, &events);
    let c = xdp.conn_counters().expect("counters");
    assert_eq!(
        (tally.conn.followed, tally.conn.drop_no_affinity),
        (6, 4),
        "{tally:?}"
    );
    assert_eq!(c.followed - start.followed, 6, "{c:?}");
    // Every cell is free again: the last packets removed every entry.
    assert!(xdp.conn_entries().unwrap().iter().all(|e| !e.used));
}

/// A worker the control plane removes loses its entries as in the sans-IO
/// leaf (`control_remove_worker` forgets them): the reinstall keeps the
/// program's table less those, and their continuations drop.
#[test]
fn a_removed_workers_entries_are_forgotten_at_reinstall() {
    let Some(mut xdp) = bpf_leaf("a_removed_workers_entries_are_forgotten_at_reinstall") else {
        return;
    };
    let mut leaf = HorusLeaf::with_options(3, SEED, CONN, HorusOptions::default());
    let addrs: Vec<WorkerAddr> = (0..3).map(worker_addr).collect();
    xdp.set_upstreams(&upstreams()).expect("upstreams");
    xdp.install(&leaf, LEAF_MAC, &addrs).expect("install");
    let mut tally = Tally::default();
    let mut step = |leaf: &mut HorusLeaf, xdp: &mut XdpLeaf, event, seq: u16| {
        let want = reference(leaf, PLAIN, 1_000, event, seq, &mut tally);
        assert_eq!(
            through_xdp(xdp, PLAIN, 1_000, event, seq),
            want,
            "{event:?}"
        );
        assert_same_state(leaf, xdp, usize::from(seq));
        want.0
    };
    // Three idle workers take the first three tasks.
    for conn in 0..3u8 {
        let first = Event::First {
            conn,
            idle_selected: false,
        };
        step(&mut leaf, &mut xdp, first, u16::from(conn));
    }
    let at_1 = leaf.conn_table().cells().filter(|e| e.used && e.node == 1);
    assert_eq!(at_1.count(), 1);
    leaf.control_remove_worker(1, &mut Outbox::new());
    xdp.reinstall(&leaf, LEAF_MAC, &addrs).expect("reinstall");
    assert_same_state(&leaf, &mut xdp, 3);
    let outcomes: Vec<Outcome> = (0..3u8)
        .map(|conn| {
            let last = Event::Cont { conn, last: true };
            step(&mut leaf, &mut xdp, last, 4 + u16::from(conn))
        })
        .collect();
    let dropped = outcomes.iter().filter(|o| **o == Outcome::Dropped);
    assert_eq!(dropped.count(), 1, "{outcomes:?}");
}

#[test]
fn an_idle_selected_task_at_a_busy_rack_resends_the_idle_remove() {
    let Some(mut xdp) = bpf_leaf("an_idle_selected_task_at_a_busy_rack_resends_the_idle_remove")
    else {
        return;
    };
    let plain = Event::Task {
        idle_selected: false,
    };
    let selected = Event::Task {
        idle_selected: true,
    };
    let events = [(10, plain), (10, plain), (10, selected)];
    differential(&mut xdp, 2, &events);
}

#[test]
fn unknown_workers_replies_are_dropped_and_lost_tasks_forgotten() {
    let Some(mut xdp) = bpf_leaf("unknown_workers_replies_are_dropped_and_lost_tasks_forgotten")
    else {
        return;
    };
    let task = Event::Task {
        idle_selected: false,
    };
    let mut events = vec![(10, task); 6];
    events.push((10, Event::Reply { node: 7, qlen: 0 }));
    // Quiet past loss_resync_ns: an empty report forgets what is still counted.
    events.push((20_000_000, Event::Reply { node: 0, qlen: 0 }));
    differential(&mut xdp, 2, &events);
    assert!(xdp.counters().expect("counters").drop_unknown_node >= 1);
}

#[test]
fn a_long_random_sequence_reaches_every_path() {
    let Some(mut xdp) = bpf_leaf("a_long_random_sequence_reaches_every_path") else {
        return;
    };
    // Replies outnumber what a worker owes and cross tasks, as reordered
    // and duplicated reports do on a real network.
    let mut rng = netsched_core::rng::Rng::new(42);
    let events = with_gaps(&mut rng, 3_000, |rng| {
        match rng.below(8) {
            0..=2 => Event::Task {
                idle_selected: rng.below(4) == 0,
            },
            // Multi-packet tasks 0-5; 6 never has a first packet.
            3 => Event::First {
                conn: rng.below(6) as u8,
                idle_selected: rng.below(4) == 0,
            },
            4 => Event::Cont {
                conn: rng.below(7) as u8,
                last: rng.below(3) == 0,
            },
            _ => Event::Reply {
                node: rng.below(7),
                qlen: rng.below(6) as u16,
            },
        }
    });
    let tally = differential(&mut xdp, 6, &events);
    let t = xdp.conn_counters().expect("counters");
    assert!(
        tally.conn.followed > 0 && tally.conn.drop_no_affinity > 0 && t.overflows > 0,
        "{t:?}"
    );
    let c = xdp.counters().expect("counters");
    assert!(tally.pow2_resubmissions > 0, "{tally:?}");
    assert!(
        tally.retries > 0 && c.stale_idle_entries > 0,
        "{tally:?} {c:?}"
    );
    assert!(
        tally.relists > 0 && c.relisted_after_reorder > 0,
        "{tally:?}"
    );
    assert!(tally.idle_adds > 0 && tally.idle_removes > 0 && tally.load_updates > 0);
    assert!(c.forgotten_lost > 0 && c.drop_unknown_node > 0, "{c:?}");
}

/// The busy path's decision rate (goal: >= 1M decisions per second per
/// core): BPF_PROG_TEST_RUN repeats one task packet, each run a lazy
/// power-of-2 decision over 8 busy workers. Run with
/// `cargo test -p netsched-xdp --test differential decision_rate -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn decision_rate() {
    let Some(mut xdp) = bpf_leaf("decision_rate") else {
        return;
    };
    let leaf = HorusLeaf::new(8, SEED, ConnTableConfig::default());
    let addrs: Vec<WorkerAddr> = (0..8).map(worker_addr).collect();
    xdp.install(&leaf, LEAF_MAC, &addrs).expect("install");
    let task = packet(
        PLAIN,
        Event::Task {
            idle_selected: false,
        },
        1,
    );
    // The first 8 tasks empty the idle list.
    xdp.test_run(&task, 8).expect("test run");
    let runs = 1_000_000;
    let busy = xdp.test_run(&task, runs).expect("test run");
    let reply = packet(PLAIN, Event::Reply { node: 3, qlen: 2 }, 1);
    let replies = xdp.test_run(&reply, runs).expect("test run");
    let c = xdp.counters().expect("counters");
    assert_eq!(c.dispatch_sampled + c.dispatch_idle, u64::from(runs) + 8);
    // A multi-packet task's continuation (§A.4): a table lookup, no pass.
    // The clock is fixed so that the entry does not expire during the runs.
    xdp.set_clock(Nanos::new(1_000)).expect("clock");
    let first = Event::First {
        conn: 0,
        idle_selected: false,
    };
    xdp.test_run(&packet(PLAIN, first, 1), 1).expect("test run");
    let cont = packet(
        PLAIN,
        Event::Cont {
            conn: 0,
            last: false,
        },
        1,
    );
    let follows = xdp.test_run(&cont, runs).expect("test run");
    assert_eq!(
        xdp.conn_counters().expect("counters").followed,
        u64::from(runs)
    );
    println!(
        "busy-path decisions: {} ns each, {:.2} M/s per core; replies: {} ns each, {:.2} M/s; \
         continuations: {} ns each, {:.2} M/s",
        busy.mean_ns,
        1e3 / f64::from(busy.mean_ns.max(1)),
        replies.mean_ns,
        1e3 / f64::from(replies.mean_ns.max(1)),
        follows.mean_ns,
        1e3 / f64::from(follows.mean_ns.max(1)),
    );
}

#[test]
fn a_leaf_with_idle_tokens_is_refused() {
    let Some(mut xdp) = bpf_leaf("a_leaf_with_idle_tokens_is_refused") else {
        return;
    };
    let leaf = HorusLeaf::with_options(
        2,
        SEED,
        ConnTableConfig::default(),
        HorusOptions::idle_tokens(),
    );
    let addrs = [worker_addr(0), worker_addr(1)];
    assert!(matches!(
        xdp.install(&leaf, LEAF_MAC, &addrs),
        Err(XdpError::IdleTokens)
    ));
}

fn event() -> impl Strategy<Value = (u64, Event)> {
    let gap = prop_oneof![8 => 1u64..5_000, 1 => 10_000_000u64..30_000_000];
    let task = any::<bool>().prop_map(|idle_selected| Event::Task { idle_selected });
    // Multi-packet tasks 0-4; 5 is a stranger's, never opened.
    let first = (0u8..5, any::<bool>()).prop_map(|(conn, idle_selected)| Event::First {
        conn,
        idle_selected,
    });
    let cont = (0u8..6, any::<bool>()).prop_map(|(conn, last)| Event::Cont { conn, last });
    // Node 4 is not a worker of the rack.
    let reply = (0u32..5, 0u16..4).prop_map(|(node, qlen)| Event::Reply { node, qlen });
    (
        gap,
        prop_oneof![3 => task, 1 => first, 2 => cont, 3 => reply],
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_packet_sequences_match_the_sans_io_leaf(
        workers in 1u32..5,
        events in proptest::collection::vec(event(), 1..60),
        forwarding in any::<bool>(),
        // Above 0 the §A.3 re-sends compare the idle count with T.
        idle_threshold in prop_oneof![2 => Just(0u32), 1 => 1u32..3],
    ) {
        let Some(mut xdp) = bpf_leaf("random_packet_sequences_match_the_sans_io_leaf") else {
            return Ok(());
        };
        let mode = Mode { forwarding, idle_threshold };
        differential_in(&mut xdp, mode, workers, &events);
    }
}

// ---- Every CPU: the pass lock (bpf/pass_lock.h, docs/xdp.md "Every CPU") ----

/// `n` events drawn by `event`, each after a gap of 1-1,000 ns, one in
/// fifty after 20 ms (longer than every timeout, so entries expire and
/// lost-task bookkeeping runs).
fn with_gaps(
    rng: &mut netsched_core::rng::Rng,
    n: usize,
    mut event: impl FnMut(&mut netsched_core::rng::Rng) -> Event,
) -> Vec<(u64, Event)> {
    (0..n)
        .map(|_| {
            let gap = if rng.below(50) == 0 {
                20_000_000
            } else {
                1 + u64::from(rng.below(1_000))
            };
            (gap, event(rng))
        })
        .collect()
}

/// The notices ring (bpf/horus_leaf.bpf.c, room for 4,096) full: a notice
/// past it is lost and counted (`notices_lost`, as a lost datagram would
/// be, §A.3), the ones drained are the sans-IO leaf's first, in its order,
/// and once drained the ring takes notices again.
#[test]
fn a_full_notice_ring_loses_the_newest_notices_counted() {
    let Some(mut xdp) = bpf_leaf("a_full_notice_ring_loses_the_newest_notices_counted") else {
        return;
    };
    // One worker: each reply lowers the rack average by a whole task, a
    // loadUpdate each (the tasks' rises mirror the spine's drift: none).
    let mut leaf = installed_leaf(&mut xdp, 1);
    let mut tally = Tally::default();
    xdp.set_clock(Nanos::new(100)).expect("clock");
    let runs = 5_000;
    let mut run = |xdp: &mut XdpLeaf, event: Event, times: u32| -> Vec<Notice> {
        xdp.test_run(&packet(PLAIN, event, 1), times)
            .expect("test run");
        (0..times)
            .flat_map(|_| reference(&mut leaf, PLAIN, 100, event, 1, &mut tally).1)
            .collect()
    };
    let task = Event::Task {
        idle_selected: false,
    };
    let want = run(&mut xdp, task, runs);
    assert_eq!(xdp.drain_notices().expect("notices"), want);
    let reply = Event::Reply { node: 0, qlen: 2 };
    let want = run(&mut xdp, reply, runs);
    let got = xdp.drain_notices().expect("notices");
    let lost = xdp.counters().expect("counters").notices_lost;
    assert!(want.len() > 4_096 && lost > 0, "{} {lost}", want.len());
    assert!(got.len() > 4_000 && got.len() <= 4_096, "{}", got.len());
    assert_eq!(got.len() as u64 + lost, want.len() as u64);
    assert_eq!(got[..], want[..got.len()]);
    let mut want = run(&mut xdp, task, 1);
    want.extend(run(&mut xdp, reply, 1));
    assert!(!want.is_empty());
    assert_eq!(xdp.drain_notices().expect("notices"), want);
}
