//! The same packets through the sans-IO Draconis switch (crates/core, every
//! recirculation run right after the pass that sent it, as the
//! Draconis-Server runs them) and through the XDP queue
//! (BPF_PROG_TEST_RUN): the same answers (Ack with its count, the
//! error_packet, the task assignment and which task, the no-op), the same
//! pointers, repair flags and queue cells after every packet, the same
//! counters.
//!
//! Needs root (loading BPF programs). Without it the tests print why and
//! pass, unless NETSCHED_REQUIRE_BPF=1 (scripts/test.sh, CI).

mod common;

use netsched_core::Nanos;
use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};

use common::{bpf_allowed, frame, mac_of, sent, SWITCH, SWITCH_MAC};
use netsched_core::pull::{
    Draconis, DraconisConfig, ExecInfo, JobSubmission, PullAction, PullDataPlane, PullInput,
    PullOutbox, Recirc, Repair, TaskInfo, TaskList,
};
use netsched_proto::{DraconisMessage, Message, TaskVec, WireTask};
use netsched_xdp::{QueuedError, XdpAction, XdpDraconis, XdpError, XdpSlot};
use proptest::prelude::*;

const CLIENTS: u32 = 3;
const EXECUTORS: u32 = 3;

fn client_addr(c: u32) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::new(10, 0, 1, c as u8 + 1), 6000 + c as u16)
}

fn executor_addr(e: u32) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::new(10, 0, 2, e as u8 + 1), 8000 + e as u16)
}

fn clients() -> Vec<SocketAddrV4> {
    (0..CLIENTS).map(client_addr).collect()
}

fn executors() -> Vec<SocketAddrV4> {
    (0..EXECUTORS).map(executor_addr).collect()
}

/// A packet arriving at the switch.
#[derive(Clone, Debug)]
enum Event {
    Job {
        client: u32,
        job: u64,
        tasks: Vec<TaskInfo>,
    },
    /// `executor == EXECUTORS` is an address the switch does not know.
    Request { executor: u32 },
}

/// What the switch answered, all passes included.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Answer {
    Ack {
        client: SocketAddrV4,
        job: u64,
        accepted: u8,
        /// The error_packet's tasks, if any did not fit.
        rejected: Option<QueuedError>,
    },
    Assigned {
        executor: SocketAddrV4,
        client: SocketAddrV4,
        skips: u16,
        task: TaskInfo,
    },
    NoOp {
        executor: SocketAddrV4,
    },
    Dropped,
}

fn wire(t: &TaskInfo) -> WireTask {
    WireTask {
        id: t.id,
        fn_id: t.fn_id,
        priority: t.priority,
        fn_par: t.fn_par,
        props: t.props,
    }
}

fn core_task(t: &WireTask) -> TaskInfo {
    TaskInfo {
        id: t.id,
        fn_id: t.fn_id,
        priority: t.priority,
        fn_par: t.fn_par,
        props: t.props,
    }
}

fn packet(event: &Event) -> Vec<u8> {
    match event {
        Event::Job { client, job, tasks } => {
            let tasks = TaskVec::from_slice(&tasks.iter().map(wire).collect::<Vec<_>>())
                .expect("at most 8 tasks");
            let m = Message::Draconis(DraconisMessage::JobSubmission { job: *job, tasks });
            frame(client_addr(*client), &m.to_vec().expect("encode"))
        }
        Event::Request { executor } => {
            let m = Message::Draconis(DraconisMessage::TaskRequest {
                node: *executor,
                resources: 0,
            });
            frame(executor_addr(*executor), &m.to_vec().expect("encode"))
        }
    }
}

/// Repairs the reference holds back instead of running, to leave a flag
/// pending (as packets between a repair's passes see it on a switch).
#[derive(Default)]
struct Held {
    hold: bool,
    repairs: Vec<Repair>,
    /// Passes run after a packet's first (the program's `recirculations`).
    recirculations: u64,
}

/// The sans-IO switch, each recirculation run after the pass that sent
/// it (first in, first out), as `DraconisServer` runs them.
fn reference(switch: &mut Draconis, event: &Event, held: &mut Held) -> Answer {
    let input = match event {
        Event::Job { client, job, tasks } => PullInput::JobSubmission(JobSubmission {
            client: *client,
            job: *job,
            tasks: TaskList::from_slice(tasks).expect("at most 8 tasks"),
        }),
        // The daemon drops a request from an address not in its executors.
        Event::Request { executor } if *executor >= EXECUTORS => return Answer::Dropped,
        Event::Request { executor } => PullInput::TaskRequest(ExecInfo {
            id: *executor,
            node: *executor,
            resources: 0,
        }),
    };
    let mut answer = Answer::Dropped;
    let mut rejected = None;
    let mut pending = VecDeque::from([input]);
    let mut first = true;
    while let Some(input) = pending.pop_front() {
        if !std::mem::take(&mut first) {
            held.recirculations += 1;
        }
        let mut out = PullOutbox::new();
        switch.handle(Nanos::ZERO, input, &mut out);
        for action in out.drain() {
            match action {
                PullAction::Recirculate(Recirc::Repair(r)) if held.hold => held.repairs.push(r),
                PullAction::Recirculate(r) => pending.push_back(PullInput::Resubmit(r)),
                PullAction::Ack {
                    client,
                    job,
                    accepted,
                } => {
                    answer = Answer::Ack {
                        client: client_addr(client),
                        job,
                        accepted,
                        rejected: None,
                    }
                }
                PullAction::ErrorPacket { client, tasks } => {
                    rejected = Some(QueuedError {
                        client: client_addr(client),
                        tasks: tasks.as_slice().to_vec(),
                    })
                }
                PullAction::AssignTask {
                    executor,
                    client,
                    task,
                    skips,
                } => {
                    answer = Answer::Assigned {
                        executor: executor_addr(executor),
                        client: client_addr(client),
                        skips,
                        task,
                    }
                }
                PullAction::NoOp { executor } => {
                    answer = Answer::NoOp {
                        executor: executor_addr(executor),
                    }
                }
                other => panic!("{event:?}: unexpected {other:?}"),
            }
        }
    }
    if let Answer::Ack { rejected: r, .. } = &mut answer {
        *r = rejected;
    }
    answer
}

fn through_xdp(xdp: &mut XdpDraconis, event: &Event) -> Answer {
    let run = xdp.test_run(&packet(event), 1).expect("test run");
    let errors = xdp.drain_errors().expect("errors");
    match run.action {
        XdpAction::Drop => {
            assert!(errors.is_empty());
            return Answer::Dropped;
        }
        XdpAction::Tx => {}
        other => panic!("{event:?} came out as {other:?}"),
    }
    let out = sent(&run.frame).unwrap_or_else(|e| panic!("{event:?}: sent frame: {e}"));
    let sender = match event {
        Event::Job { client, .. } => client_addr(*client),
        Event::Request { executor } => executor_addr(*executor),
    };
    assert_eq!(out.to, sender, "answered to its sender");
    assert_eq!(out.from, SWITCH, "from the switch's address");
    assert_eq!(out.dst_mac, mac_of(sender));
    assert_eq!(out.src_mac, SWITCH_MAC);
    let message = netsched_proto::decode(out.payload)
        .unwrap_or_else(|e| panic!("{event:?}: the sent datagram does not decode: {e}"));
    let Message::Draconis(message) = message else {
        panic!("{event:?}: sent {message:?}");
    };
    match message {
        DraconisMessage::Ack { job, accepted } => {
            assert!(errors.len() <= 1, "{errors:?}");
            Answer::Ack {
                client: sender,
                job,
                accepted,
                rejected: errors.into_iter().next(),
            }
        }
        DraconisMessage::TaskAssignment {
            client,
            skips,
            task,
        } => Answer::Assigned {
            executor: sender,
            client,
            skips,
            task: core_task(&task),
        },
        DraconisMessage::NoOp => Answer::NoOp { executor: sender },
        other => panic!("{event:?}: sent {other:?}"),
    }
}

/// Every level's pointers, repair flags and cells agree.
fn assert_same_state(switch: &Draconis, xdp: &mut XdpDraconis, step: usize) {
    let queue = switch.queue();
    let clients = clients();
    for level in 0..queue.levels() {
        assert_eq!(
            xdp.pointers(level).expect("pointers"),
            queue.pointers(level),
            "pointers of level {level} after packet {step}"
        );
        let expected: Vec<XdpSlot> = queue
            .entries(level)
            .iter()
            .map(|s| XdpSlot::of(s, &clients))
            .collect();
        assert_eq!(
            xdp.entries(level).expect("entries"),
            expected,
            "cells of level {level} after packet {step}"
        );
    }
}

fn load(test: &str, config: &DraconisConfig) -> Option<XdpDraconis> {
    common::load_program(test, "Draconis queue", || XdpDraconis::load(config))
}

/// Runs `events` through both and compares after every packet; `switch`
/// is installed first.
fn run_both(switch: &mut Draconis, xdp: &mut XdpDraconis, events: &[Event], held: &mut Held) {
    for (step, event) in events.iter().enumerate() {
        let expected = reference(switch, event, held);
        let got = through_xdp(xdp, event);
        assert_eq!(got, expected, "packet {step}: {event:?}");
        assert_same_state(switch, xdp, step + 1);
    }
}

/// The counters the program shares with `DraconisStats`, since `start`.
fn assert_same_counters(switch: &Draconis, xdp: &mut XdpDraconis) {
    let c = xdp.counters().expect("counters");
    let s = switch.stats;
    assert_eq!(
        (
            c.tasks_enqueued,
            c.tasks_rejected,
            c.assigned,
            c.noops,
            c.add_repairs,
            c.retrieve_repairs
        ),
        (
            s.tasks_enqueued,
            s.tasks_rejected,
            s.assigned,
            s.noops,
            s.add_repairs,
            s.retrieve_repairs
        ),
        "{c:?} against {s:?}"
    );
}

fn differential(config: DraconisConfig, xdp: &mut XdpDraconis, events: &[Event]) -> Draconis {
    let mut switch = Draconis::new(config);
    xdp.install(&switch, &clients(), &executors())
        .expect("install");
    assert_same_state(&switch, xdp, 0);
    let mut held = Held::default();
    run_both(&mut switch, xdp, events, &mut held);
    assert_same_counters(&switch, xdp);
    let recirculations = xdp.counters().expect("counters").recirculations;
    assert_eq!(recirculations, held.recirculations, "recirculations");
    switch
}

fn task(id: u64, priority: u8) -> TaskInfo {
    TaskInfo {
        id,
        fn_id: 1,
        priority,
        fn_par: id * 1_000 + 7,
        props: u64::MAX - id,
    }
}

fn job(client: u32, job: u64, tasks: &[TaskInfo]) -> Event {
    Event::Job {
        client,
        job,
        tasks: tasks.to_vec(),
    }
}

const REQUEST: Event = Event::Request { executor: 1 };

#[test]
fn tasks_leave_in_order_and_an_empty_queue_answers_no_op() {
    let config = DraconisConfig::fcfs(8);
    let Some(mut xdp) = load("tasks_leave_in_order", &config) else {
        return;
    };
    let tasks: Vec<TaskInfo> = (1..=3).map(|i| task(i, 0)).collect();
    let events = [
        job(0, 100, &tasks),
        REQUEST,
        Event::Request { executor: 2 },
        REQUEST,
        REQUEST,
    ];
    let switch = differential(config, &mut xdp, &events);
    assert_eq!(switch.stats.assigned, 3);
    assert_eq!(switch.stats.noops, 1);
}

#[test]
fn a_full_queue_returns_tasks_and_repairs_add_ptr() {
    let config = DraconisConfig::fcfs(4);
    let Some(mut xdp) = load("a_full_queue_returns_tasks", &config) else {
        return;
    };
    let six: Vec<TaskInfo> = (1..=6).map(|i| task(i, 0)).collect();
    let events = [job(1, 7, &six), REQUEST, job(2, 8, &six[..3]), REQUEST];
    let switch = differential(config, &mut xdp, &events);
    assert!(switch.stats.add_repairs >= 1 && switch.stats.tasks_rejected >= 3);
}

#[test]
fn requests_on_an_empty_queue_overshoot_and_a_submission_repairs_retrieve_ptr() {
    let config = DraconisConfig::fcfs(4);
    let Some(mut xdp) = load("requests_on_an_empty_queue_overshoot", &config) else {
        return;
    };
    let events = [
        REQUEST,
        REQUEST,
        REQUEST,
        job(0, 1, &[task(1, 0), task(2, 0)]),
        REQUEST,
        REQUEST,
        REQUEST,
    ];
    let switch = differential(config, &mut xdp, &events);
    assert_eq!(switch.stats.retrieve_repairs, 1);
    assert_eq!(switch.stats.assigned, 2);
}

#[test]
fn priorities_are_served_highest_level_first() {
    let config = DraconisConfig::priority(4);
    let Some(mut xdp) = load("priorities_are_served_highest_level_first", &config) else {
        return;
    };
    // Priorities 0 (counted as 1) to 6 (clamped to the lowest level).
    let tasks: Vec<TaskInfo> = (0..7).map(|p| task(u64::from(p) + 1, p)).collect();
    let mut events = vec![job(0, 3, &tasks)];
    events.extend(std::iter::repeat_n(REQUEST, 9));
    differential(config, &mut xdp, &events);
}

#[test]
fn requests_from_unknown_executors_are_dropped() {
    let config = DraconisConfig::fcfs(4);
    let Some(mut xdp) = load("requests_from_unknown_executors_are_dropped", &config) else {
        return;
    };
    let events = [
        job(0, 1, &[task(1, 0)]),
        Event::Request {
            executor: EXECUTORS,
        },
        REQUEST,
    ];
    differential(config, &mut xdp, &events);
    assert_eq!(xdp.counters().expect("counters").drop_unknown_executor, 1);
}

/// A switch lets packets run between a repair's passes; XDP runs a
/// packet's passes back to back, so only an installed state has a flag
/// pending. Both must then refuse submissions (pending add repair), judge
/// fullness against the head the retrieve repair will restore, answer
/// requests with a no-op, and agree once the repair lands.
#[test]
fn pending_repairs_installed_from_a_switch_behave_as_on_the_switch() {
    let config = DraconisConfig::fcfs(4);
    let Some(mut xdp) = load("pending_repairs_installed", &config) else {
        return;
    };
    for (setup, after) in [
        // Overshoot, then a submission sets the retrieve flag.
        (
            vec![REQUEST, REQUEST, job(0, 1, &[task(1, 0)])],
            vec![
                REQUEST,
                job(1, 2, &(2..=6).map(|i| task(i, 0)).collect::<Vec<_>>()),
                REQUEST,
            ],
        ),
        // A full queue's rejection sets the add flag.
        (
            vec![job(0, 1, &(1..=5).map(|i| task(i, 0)).collect::<Vec<_>>())],
            vec![job(2, 2, &[task(9, 0)]), REQUEST, REQUEST],
        ),
    ] {
        let mut switch = Draconis::new(config);
        let mut held = Held {
            hold: true,
            ..Held::default()
        };
        for event in &setup {
            reference(&mut switch, event, &mut held);
        }
        assert_eq!(held.repairs.len(), 1, "{setup:?}");
        held.hold = false;
        xdp.install(&switch, &clients(), &executors())
            .expect("install");
        assert_same_state(&switch, &mut xdp, 0);
        run_both(&mut switch, &mut xdp, &after, &mut held);
        for repair in std::mem::take(&mut held.repairs) {
            let mut out = PullOutbox::new();
            switch.handle(
                Nanos::ZERO,
                PullInput::Resubmit(Recirc::Repair(repair)),
                &mut out,
            );
            assert!(out.is_empty());
            xdp.land_repair(repair).expect("repair");
        }
        assert_same_state(&switch, &mut xdp, after.len());
        run_both(&mut switch, &mut xdp, &after, &mut held);
    }
}

#[test]
fn swap_policies_and_too_many_levels_are_refused() {
    if !bpf_allowed("swap_policies_and_too_many_levels_are_refused") {
        return;
    }
    assert!(matches!(
        XdpDraconis::load(&DraconisConfig::resource(8, 4)),
        Err(XdpError::SwapPolicy) | Err(XdpError::ObjectMissing)
    ));
    let mut many = DraconisConfig::priority(8);
    many.levels = 9;
    assert!(matches!(
        XdpDraconis::load(&many),
        Err(XdpError::TooManyLevels { levels: 9 }) | Err(XdpError::ObjectMissing)
    ));
}

/// A job with probability `job_percent`, else a request (one in four
/// executors unknown).
fn random_event(rng: &mut netsched_core::rng::Rng, seq: u64, job_percent: u32) -> Event {
    if rng.below(100) < job_percent {
        let n = 1 + u64::from(rng.below(4));
        let tasks = (0..n)
            .map(|i| task(seq * 8 + i, rng.below(4) as u8))
            .collect();
        Event::Job {
            client: rng.below(CLIENTS),
            job: seq,
            tasks,
        }
    } else {
        Event::Request {
            executor: rng.below(EXECUTORS + 1),
        }
    }
}

#[test]
fn a_long_random_sequence_reaches_every_path() {
    let config = DraconisConfig {
        levels: 2,
        ..DraconisConfig::fcfs(8)
    };
    let Some(mut xdp) = load("a_long_random_sequence_reaches_every_path", &config) else {
        return;
    };
    let mut rng = netsched_core::rng::Rng::new(19);
    // Bursts of jobs fill the queue, bursts of requests drain it past empty.
    let events: Vec<Event> = (0..2_000u64)
        .map(|seq| {
            let job_percent = if (seq / 25) % 2 == 0 { 70 } else { 10 };
            random_event(&mut rng, seq, job_percent)
        })
        .collect();
    let switch = differential(config, &mut xdp, &events);
    let s = switch.stats;
    let c = xdp.counters().expect("counters");
    assert!(
        s.assigned > 0 && s.noops > 0 && s.tasks_rejected > 0,
        "{s:?}"
    );
    assert!(s.add_repairs > 0 && s.retrieve_repairs > 0, "{s:?}");
    assert!(c.drop_unknown_executor > 0 && c.recirculations > 0, "{c:?}");
}

fn event(levels: u8) -> impl Strategy<Value = Event> {
    let t = (any::<u64>(), 0u8..levels + 2, any::<u32>(), any::<u64>()).prop_map(
        |(id, priority, fn_id, fn_par)| TaskInfo {
            id,
            fn_id,
            priority,
            fn_par,
            props: id.rotate_left(7),
        },
    );
    let job = (
        0..CLIENTS,
        any::<u64>(),
        proptest::collection::vec(t, 1..=8),
    )
        .prop_map(|(client, job, tasks)| Event::Job { client, job, tasks });
    let request = (0..=EXECUTORS).prop_map(|executor| Event::Request { executor });
    prop_oneof![1 => job, 2 => request]
}

fn config_and_events() -> impl Strategy<Value = (DraconisConfig, Vec<Event>)> {
    (0u32..4, 1u8..4).prop_flat_map(|(log_capacity, levels)| {
        let config = DraconisConfig {
            levels,
            ..DraconisConfig::fcfs(1 << log_capacity)
        };
        (
            Just(config),
            proptest::collection::vec(event(levels), 1..40),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_packet_sequences_match_the_sans_io_switch(
        (config, events) in config_and_events(),
    ) {
        let Some(mut xdp) = load("random_packet_sequences_match_the_sans_io_switch", &config)
        else {
            return Ok(());
        };
        differential(config, &mut xdp, &events);
    }
}

/// The XDP queue's time per packet, from the kernel's own timing of each
/// BPF_PROG_TEST_RUN (one run each: the program answers in place, so a
/// repeated run would see its own answer). Run with
/// `cargo test -p netsched-xdp --test draconis_differential decision_rate -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn decision_rate() {
    let config = DraconisConfig::fcfs(1 << 17);
    let Some(mut xdp) = load("decision_rate", &config) else {
        return;
    };
    xdp.install(&Draconis::new(config), &clients(), &executors())
        .expect("install");
    let runs = 50_000u64;
    let mut median = |packet: &[u8], expect: XdpAction, n: u64| {
        let mut ns: Vec<u32> = (0..n)
            .map(|_| {
                let run = xdp.test_run(packet, 1).expect("test run");
                assert_eq!(run.action, expect);
                run.mean_ns
            })
            .collect();
        ns.sort_unstable();
        ns[ns.len() / 2]
    };
    let one = packet(&job(0, 1, &[task(1, 0)]));
    let eight = packet(&job(0, 2, &(1..=8).map(|i| task(i, 0)).collect::<Vec<_>>()));
    let submit_one = median(&one, XdpAction::Tx, runs);
    let submit_eight = median(&eight, XdpAction::Tx, runs / 8);
    let assign = median(&packet(&REQUEST), XdpAction::Tx, 2 * runs);
    let noop = median(&packet(&REQUEST), XdpAction::Tx, runs / 5);
    let c = xdp.counters().expect("counters");
    assert_eq!(c.assigned, 2 * runs);
    assert_eq!(c.noops, runs / 5);
    let per_s = |ns: u32| 1e3 / f64::from(ns.max(1));
    println!(
        "median ns per packet: 1-task submission {submit_one} ({:.2} M/s), 8-task submission {submit_eight} ({:.2} M tasks/s), assignment {assign} ({:.2} M/s), no-op {noop}",
        per_s(submit_one),
        8.0 * per_s(submit_eight),
        per_s(assign),
    );
}
