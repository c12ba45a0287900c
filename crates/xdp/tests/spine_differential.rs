//! The same packets through the sans-IO HorusSpine (crates/core) and through
//! the XDP spine (BPF_PROG_TEST_RUN): the same rack for every task (and its
//! idleSelected mark), the same counters, register arrays and random stream
//! after every packet.
//!
//! Needs root; without it the tests print why and pass, unless
//! NETSCHED_REQUIRE_BPF=1, which makes them fail instead.

mod common;

use std::net::{Ipv4Addr, SocketAddrV4};

use common::{bpf_allowed, bpf_required, frame, sent, SWITCH_MAC};
use netsched_core::horus::{ConnTableConfig, HorusOptions, HorusSpine};
use netsched_core::{
    Action, DataPlane, Decision, DropReason, Input, NodeId, Outbox, Resubmit, TaskMeta,
};
use netsched_proto::{
    HorusBody, HorusHeader, HorusMessage, HorusReply, HorusTask, Message, ReplyStatus,
};
use netsched_xdp::{RackAddr, SpineCounters, XdpAction, XdpError, XdpSpine};
use proptest::prelude::*;

const CLIENT: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 5000);
const SEED: u64 = 0x5e1e;

/// A packet arriving at the spine.
#[derive(Clone, Copy, Debug)]
enum Event {
    Task {
        idle_selected: bool,
    },
    IdleAdd {
        rack: NodeId,
    },
    IdleRemove {
        rack: NodeId,
    },
    LoadUpdate {
        rack: NodeId,
        load: u32,
    },
    /// A reply on its way to the client: passed up, no state touched.
    Reply,
}

/// What the spine did with one packet, all passes included.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    /// The rack and whether the task was marked idleSelected (§A.3).
    Dispatched {
        rack: NodeId,
        idle_selected: bool,
    },
    /// A notice taken into the state (or counted as stale, unknown, ...).
    Consumed,
    Passed,
    Dropped,
}

fn leaf_addr(rack: u32) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::new(10, 0, 2, rack as u8 + 1), 7100 + rack as u16)
}

fn rack_addr(rack: u32) -> RackAddr {
    let a = leaf_addr(rack);
    RackAddr {
        mac: common::mac_of(a),
        ip: *a.ip(),
        port: a.port(),
    }
}

fn bpf_spine(test: &str) -> Option<XdpSpine> {
    if !bpf_allowed(test) {
        return None;
    }
    match XdpSpine::load() {
        Ok(spine) => Some(spine),
        Err(XdpError::ObjectMissing) if !bpf_required() => {
            eprintln!("{test}: skipped, the BPF object was not built (no clang)");
            None
        }
        Err(e) => panic!("{test}: loading the XDP spine: {e}"),
    }
}

fn packet(event: Event, seq: u16) -> Vec<u8> {
    let header = |src_id: NodeId| HorusHeader {
        pool_id: 1,
        src_id: src_id as u16,
        seq,
        ..HorusHeader::default()
    };
    let (from, header, body) = match event {
        Event::Task { idle_selected } => (
            CLIENT,
            header(0),
            HorusBody::TaskFirst(HorusTask {
                task_id: (7u64 << 32) | u64::from(seq),
                is_last: true,
                idle_selected,
                payload: b"key",
                ..HorusTask::default()
            }),
        ),
        Event::IdleAdd { rack } => (leaf_addr(rack), header(rack), HorusBody::IdleAdd),
        Event::IdleRemove { rack } => (leaf_addr(rack), header(rack), HorusBody::IdleRemove),
        Event::LoadUpdate { rack, load } => (
            leaf_addr(rack),
            header(rack),
            HorusBody::LoadUpdate { load },
        ),
        Event::Reply => (
            leaf_addr(0),
            header(0),
            HorusBody::Reply(HorusReply {
                task_id: u64::from(seq),
                status: ReplyStatus::Ok,
                payload: b"value",
            }),
        ),
    };
    let message = Message::Horus(HorusMessage { header, body });
    frame(from, &message.to_vec().expect("encode"))
}

/// The sans-IO spine, resubmissions run at once, with the counters the
/// program keeps derived from its actions.
fn reference(spine: &mut HorusSpine, event: Event, seq: u16, c: &mut SpineCounters) -> Outcome {
    let known = |rack: NodeId| spine.busy_nodes().contains(rack);
    let input = match event {
        Event::Task { idle_selected } => Input::Task(TaskMeta {
            id: (7u64 << 32) | u64::from(seq),
            first: true,
            last: true,
            idle_selected,
            upstream: 0,
            class: 0,
        }),
        Event::IdleAdd { rack } => {
            c.idle_adds += u64::from(known(rack));
            Input::IdleAdd { node: rack }
        }
        Event::IdleRemove { rack } => {
            c.idle_removes += u64::from(known(rack));
            Input::IdleRemove { node: rack }
        }
        Event::LoadUpdate { rack, load } => {
            c.load_updates += u64::from(known(rack));
            Input::LoadUpdate { node: rack, load }
        }
        Event::Reply => {
            c.passed += 1;
            return Outcome::Passed;
        }
    };
    let mut outcome = match event {
        Event::Task { .. } => Outcome::Dropped,
        _ => Outcome::Consumed,
    };
    let mut pending = vec![input];
    while let Some(input) = pending.pop() {
        let mut out = Outbox::new();
        spine.handle(0, input, &mut out);
        for action in out.drain() {
            match action {
                Action::Dispatch {
                    node,
                    task,
                    decision,
                } => {
                    match decision {
                        Decision::Idle => c.dispatch_idle += 1,
                        Decision::Sampled => c.dispatch_sampled += 1,
                        Decision::Other => unreachable!("no tokens, no affinity"),
                    }
                    outcome = Outcome::Dispatched {
                        rack: node,
                        idle_selected: task.idle_selected,
                    };
                }
                Action::Resubmit(r) => {
                    assert!(matches!(
                        r,
                        Resubmit::Pow2 { .. }
                            | Resubmit::IdleRemove { .. }
                            | Resubmit::IdleRemoveRelease
                    ));
                    c.resubmissions += 1;
                    pending.insert(0, Input::Resubmit(r));
                }
                Action::Drop(reason) => match reason {
                    DropReason::NoNodes => c.drop_no_nodes += 1,
                    DropReason::UnknownNode => c.drop_unknown_node += 1,
                    DropReason::StaleIdleUpdate => c.stale_idle_updates += 1,
                    DropReason::LockHeld => c.drop_lock_held += 1,
                    DropReason::Overflow => c.drop_overflow += 1,
                    other => panic!("{event:?}: unexpected drop {other:?}"),
                },
                other => panic!("{event:?}: unexpected action {other:?}"),
            }
        }
    }
    outcome
}

fn through_xdp(xdp: &mut XdpSpine, event: Event, seq: u16) -> Outcome {
    let run = xdp.test_run(&packet(event, seq), 1).expect("test run");
    match (event, run.action) {
        (Event::Task { .. }, XdpAction::Tx) => {
            let s = sent(&run.frame).expect("a valid frame");
            let Message::Horus(m) = netsched_proto::decode(s.payload).expect("decodes") else {
                panic!("not a Horus message");
            };
            let HorusBody::TaskFirst(task) = m.body else {
                panic!("forwarded {:?}", m.body);
            };
            let rack = NodeId::from(m.header.dst_id);
            assert_eq!(s.to, leaf_addr(rack), "destination");
            assert_eq!(s.dst_mac, rack_addr(rack).mac, "destination MAC");
            assert_eq!(s.src_mac, SWITCH_MAC, "source MAC");
            assert_eq!(s.from, CLIENT, "source kept (no source configured)");
            assert_eq!(task.task_id, (7u64 << 32) | u64::from(seq));
            Outcome::Dispatched {
                rack,
                idle_selected: task.idle_selected,
            }
        }
        (Event::Task { .. }, XdpAction::Drop) => Outcome::Dropped,
        (Event::Reply, XdpAction::Pass) => Outcome::Passed,
        (
            Event::IdleAdd { .. } | Event::IdleRemove { .. } | Event::LoadUpdate { .. },
            XdpAction::Drop,
        ) => Outcome::Consumed,
        (event, action) => panic!("{event:?} came out as {action:?}"),
    }
}

fn assert_same_state(spine: &HorusSpine, xdp: &mut XdpSpine, step: usize) {
    for dump in spine.registers() {
        let cells = xdp
            .read_array(dump.name, dump.cells.len())
            .expect("read map");
        assert_eq!(cells, dump.cells, "`{}` after packet {step}", dump.name);
    }
    assert_eq!(
        xdp.rng_state().expect("rng"),
        spine.rng_state(),
        "random stream after packet {step}"
    );
}

/// Runs `events` through both spines over racks of `rack_workers` workers
/// and compares after every packet. Returns the counters.
fn differential(xdp: &mut XdpSpine, rack_workers: &[u32], events: &[Event]) -> SpineCounters {
    let mut spine = HorusSpine::with_options(
        rack_workers,
        SEED,
        ConnTableConfig::default(),
        HorusOptions::default(),
    );
    let addrs: Vec<RackAddr> = (0..rack_workers.len() as u32).map(rack_addr).collect();
    xdp.install(&spine, SWITCH_MAC, &addrs).expect("install");
    assert_same_state(&spine, xdp, 0);
    let start = xdp.counters().expect("counters");
    let mut expected = SpineCounters::default();
    for (step, &event) in events.iter().enumerate() {
        let seq = step as u16;
        let want = reference(&mut spine, event, seq, &mut expected);
        let got = through_xdp(xdp, event, seq);
        assert_eq!(got, want, "packet {step}: {event:?}");
        assert_same_state(&spine, xdp, step + 1);
        spine.idle_nodes().check_invariant().expect("idle list");
        let now = xdp.counters().expect("counters");
        assert_eq!(delta(now, start), expected, "counters after packet {step}");
    }
    expected
}

fn delta(a: SpineCounters, b: SpineCounters) -> SpineCounters {
    SpineCounters {
        dispatch_idle: a.dispatch_idle - b.dispatch_idle,
        dispatch_sampled: a.dispatch_sampled - b.dispatch_sampled,
        resubmissions: a.resubmissions - b.resubmissions,
        drop_no_nodes: a.drop_no_nodes - b.drop_no_nodes,
        drop_unknown_node: a.drop_unknown_node - b.drop_unknown_node,
        stale_idle_updates: a.stale_idle_updates - b.stale_idle_updates,
        drop_lock_held: a.drop_lock_held - b.drop_lock_held,
        drop_overflow: a.drop_overflow - b.drop_overflow,
        idle_adds: a.idle_adds - b.idle_adds,
        idle_removes: a.idle_removes - b.idle_removes,
        load_updates: a.load_updates - b.load_updates,
        passed: a.passed - b.passed,
        drop_unregistered: a.drop_unregistered - b.drop_unregistered,
    }
}

const TASK: Event = Event::Task {
    idle_selected: false,
};

#[test]
fn idle_racks_first_then_power_of_two_over_reported_loads() {
    let Some(mut xdp) = bpf_spine("idle_racks_first_then_power_of_two_over_reported_loads") else {
        return;
    };
    // Three racks start idle: tasks go to the last-announced one, marked,
    // until the leaves remove themselves (the middle one first: the last
    // rack moves into its slot). Then power-of-2 over the reported loads,
    // with resubmissions once the drift outgrows the gap.
    let mut events = vec![TASK, TASK, Event::IdleRemove { rack: 1 }, TASK];
    events.extend([Event::IdleRemove { rack: 2 }, Event::IdleRemove { rack: 0 }]);
    events.extend([
        Event::LoadUpdate {
            rack: 0,
            load: 3 << 16,
        },
        Event::LoadUpdate {
            rack: 1,
            load: 1 << 16,
        },
        Event::LoadUpdate {
            rack: 2,
            load: 2 << 16,
        },
    ]);
    events.extend(std::iter::repeat_n(TASK, 40));
    // Re-sent notices (§A.3) are counted, not applied twice; a reply passes.
    events.extend([
        Event::IdleAdd { rack: 2 },
        Event::IdleAdd { rack: 2 },
        Event::IdleRemove { rack: 0 },
        Event::Reply,
        TASK,
        Event::IdleAdd { rack: 9 },
    ]);
    let c = differential(&mut xdp, &[4, 2, 8], &events);
    assert_eq!(c.dispatch_idle, 4, "{c:?}");
    assert!(c.dispatch_sampled == 40 && c.resubmissions > 3, "{c:?}");
    assert_eq!((c.stale_idle_updates, c.drop_unknown_node), (2, 1), "{c:?}");
}

/// Racks of equal size reporting equal averages: the actual loads of the
/// two samples tie often, and a tie goes to the first sample (Alg. 2's
/// CompareSamples, `LazyPow2::resubmit_choice`).
#[test]
fn ties_in_actual_load_go_to_the_first_sample() {
    let Some(mut xdp) = bpf_spine("ties_in_actual_load_go_to_the_first_sample") else {
        return;
    };
    let mut events: Vec<Event> = (0..4).map(|rack| Event::IdleRemove { rack }).collect();
    for round in 0..20 {
        events.extend((0..4).map(|rack| Event::LoadUpdate {
            rack,
            load: (round % 3) << 16,
        }));
        events.extend(std::iter::repeat_n(TASK, 12));
    }
    let c = differential(&mut xdp, &[4, 4, 4, 4], &events);
    assert!(c.resubmissions > 40, "{c:?}");
}

/// A notice naming a linked rack from any address but its leaf's changes
/// nothing: anyone could otherwise unlist every rack.
#[test]
fn a_notice_from_a_forged_source_is_ignored() {
    let Some(mut xdp) = bpf_spine("a_notice_from_a_forged_source_is_ignored") else {
        return;
    };
    let spine = HorusSpine::new(&[2, 2], SEED, ConnTableConfig::default());
    xdp.install(&spine, SWITCH_MAC, &[rack_addr(0), rack_addr(1)])
        .expect("install");
    let forged = |body| {
        let header = HorusHeader {
            pool_id: 1,
            src_id: 1,
            ..HorusHeader::default()
        };
        let m = Message::Horus(HorusMessage { header, body });
        frame(CLIENT, &m.to_vec().expect("encode"))
    };
    for body in [
        HorusBody::IdleRemove,
        HorusBody::LoadUpdate { load: 9 << 16 },
    ] {
        let run = xdp.test_run(&forged(body), 1).expect("test run");
        assert_eq!(run.action, XdpAction::Drop);
    }
    assert_same_state(&spine, &mut xdp, 0);
    let c = xdp.counters().expect("counters");
    assert_eq!(
        (c.drop_unregistered, c.idle_removes, c.load_updates),
        (2, 0, 0)
    );
}

#[test]
fn a_spine_with_horus_sim_options_is_refused() {
    let Some(mut xdp) = bpf_spine("a_spine_with_horus_sim_options_is_refused") else {
        return;
    };
    let spine = HorusSpine::with_options(
        &[2, 2],
        SEED,
        ConnTableConfig::default(),
        HorusOptions::horus_sim(),
    );
    let addrs = [rack_addr(0), rack_addr(1)];
    assert!(matches!(
        xdp.install(&spine, SWITCH_MAC, &addrs),
        Err(XdpError::SpineOptions)
    ));
}

fn event(racks: u32) -> impl Strategy<Value = Event> {
    // Rack `racks` is not linked to the spine.
    let rack = 0..=racks;
    prop_oneof![
        4 => any::<bool>().prop_map(|idle_selected| Event::Task { idle_selected }),
        1 => rack.clone().prop_map(|rack| Event::IdleAdd { rack }),
        1 => rack.clone().prop_map(|rack| Event::IdleRemove { rack }),
        2 => (rack, 0u32..(6 << 16)).prop_map(|(rack, load)| Event::LoadUpdate { rack, load }),
        1 => Just(Event::Reply),
    ]
}

fn rack_sequence() -> impl Strategy<Value = (Vec<u32>, Vec<Event>)> {
    proptest::collection::vec(1u32..9, 1..6).prop_flat_map(|workers| {
        let racks = workers.len() as u32;
        (
            Just(workers),
            proptest::collection::vec(event(racks), 1..80),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_packet_sequences_match_the_sans_io_spine((workers, events) in rack_sequence()) {
        let Some(mut xdp) = bpf_spine("random_packet_sequences_match_the_sans_io_spine") else {
            return Ok(());
        };
        differential(&mut xdp, &workers, &events);
    }
}

/// A long random run that must reach every path of the program.
#[test]
fn a_long_random_sequence_reaches_every_path() {
    let Some(mut xdp) = bpf_spine("a_long_random_sequence_reaches_every_path") else {
        return;
    };
    let mut rng = netsched_core::rng::Rng::new(43);
    let racks = 5;
    let events: Vec<Event> = (0..3_000)
        .map(|_| match rng.below(10) {
            0..=4 => Event::Task {
                idle_selected: rng.below(2) == 0,
            },
            5 => Event::IdleAdd {
                rack: rng.below(racks + 1),
            },
            6 => Event::IdleRemove {
                rack: rng.below(racks + 1),
            },
            7 | 8 => Event::LoadUpdate {
                rack: rng.below(racks + 1),
                load: rng.below(8 << 16),
            },
            _ => Event::Reply,
        })
        .collect();
    let c = differential(&mut xdp, &[1, 3, 8, 2, 5], &events);
    assert!(c.dispatch_idle > 0 && c.dispatch_sampled > 0, "{c:?}");
    assert!(c.resubmissions > c.idle_removes, "{c:?}");
    assert!(c.stale_idle_updates > 0 && c.drop_unknown_node > 0, "{c:?}");
    assert!(
        c.idle_adds > 0 && c.load_updates > 0 && c.passed > 0,
        "{c:?}"
    );
}

/// The spine's busy-path decision rate: BPF_PROG_TEST_RUN repeats one task
/// packet, each run a lazy power-of-2 decision over 8 racks with no idle
/// rack. Run with `cargo test -p netsched-xdp --test spine_differential
/// decision_rate -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn decision_rate() {
    let Some(mut xdp) = bpf_spine("decision_rate") else {
        return;
    };
    let mut spine = HorusSpine::new(&[8; 8], SEED, ConnTableConfig::default());
    // Every rack unlisted: the busy path.
    for rack in 0..8 {
        let mut c = SpineCounters::default();
        reference(&mut spine, Event::IdleRemove { rack }, 0, &mut c);
    }
    let addrs: Vec<RackAddr> = (0..8).map(rack_addr).collect();
    xdp.install(&spine, SWITCH_MAC, &addrs).expect("install");
    let runs = 1_000_000;
    let busy = xdp.test_run(&packet(TASK, 1), runs).expect("test run");
    let load = Event::LoadUpdate {
        rack: 3,
        load: 2 << 16,
    };
    let updates = xdp.test_run(&packet(load, 1), runs).expect("test run");
    let c = xdp.counters().expect("counters");
    assert_eq!(c.dispatch_sampled, u64::from(runs));
    println!(
        "spine busy-path decisions: {} ns each, {:.2} M/s per core; loadUpdates: {} ns each",
        busy.mean_ns,
        1e3 / f64::from(busy.mean_ns.max(1)),
        updates.mean_ns,
    );
}
