//! The spine on every CPU (docs/xdp.md, "Every CPU"): with the pass lock
//! on, one CPU's packets match the sans-IO spine in order, and threads on
//! two CPUs match it in the order they took the lock, notices sealed and
//! replayed, soft state expiring and multi-packet tasks among them.

use super::*;
use std::collections::{BTreeMap, BTreeSet};

use netsched_core::rng::Rng;

/// A packet's key in the pass order log (`spine_key` of the C source): its
/// type and its header's seq.
fn pass_key(bytes: &[u8]) -> u32 {
    (u32::from(bytes[1]) << 16) | u32::from(u16::from_be_bytes([bytes[10], bytes[11]]))
}

/// Whether the program runs `bytes` (of `event`) through its passes, taking
/// a ticket, under sealing `key`: tasks always, notices whose seal the
/// socket daemon's rule opens (a replay is refused in the passes), never a
/// reply or a tick.
fn takes_ticket(key: Option<&NoticeKey>, event: Event, bytes: &[u8]) -> bool {
    match event {
        Event::Task { .. } | Event::First { .. } | Event::Cont { .. } => true,
        Event::Reply | Event::Tick { .. } => false,
        _ => seal::open(key, bytes).is_ok(),
    }
}

/// A random packet over `racks` racks (one more: not linked), no notice
/// from rack `silent`.
fn random_event(rng: &mut Rng, racks: u32, silent: u32) -> Event {
    let rack = |rng: &mut Rng| {
        let r = rng.below(racks);
        // Rack `silent` is replaced by the unlinked one.
        if r == silent {
            racks
        } else {
            r
        }
    };
    match rng.below(12) {
        0..=3 => Event::Task {
            idle_selected: rng.below(4) == 0,
        },
        4 => Event::First {
            conn: rng.below(5) as u8,
        },
        5 | 6 => Event::Cont {
            conn: rng.below(6) as u8,
            last: rng.below(3) == 0,
        },
        7 => Event::IdleAdd { rack: rack(rng) },
        8 => Event::IdleRemove { rack: rack(rng) },
        9 | 10 => Event::LoadUpdate {
            rack: rack(rng),
            load: rng.below(6 << 16),
        },
        _ => Event::Reply,
    }
}

/// How a notice travels: mostly sealed with `fresh` (growing), else
/// sealed with an older number (a replay when taken in that order),
/// unsealed, or under another key.
fn random_seal(rng: &mut Rng, fresh: u64) -> SealAs {
    match rng.below(8) {
        0 => SealAs::Sealed(fresh.saturating_sub(u64::from(rng.below(64)))),
        1 => SealAs::Plain,
        2 => SealAs::Forged(fresh),
        _ => SealAs::Sealed(fresh),
    }
}

/// The random sequence with the pass lock on and its order log kept, one
/// CPU, sealing on and soft state ticking: the lock changes nothing a
/// packet sees, and every packet that runs passes took one ticket, in the
/// order sent.
#[test]
fn with_the_pass_lock_on_packets_match_the_sans_io_spine_in_order() {
    let test = "with_the_pass_lock_on_packets_match_the_sans_io_spine_in_order";
    let Some(mut xdp) = bpf_spine(test) else {
        return;
    };
    xdp.set_every_cpu(true).expect("every cpu");
    xdp.set_pass_order_log(true).expect("order log");
    let mut rng = Rng::new(47);
    let (racks, mut clock) = (4, 0);
    let events: Vec<(Event, SealAs)> = (0..1_200u64)
        .map(|i| {
            if rng.below(25) == 0 {
                clock += u64::from(rng.below(1_000));
                return (Event::Tick { now: clock }, SealAs::Plain);
            }
            let event = random_event(&mut rng, racks, racks + 1);
            (event, random_seal(&mut rng, 2 * i))
        })
        .collect();
    let c = differential_with(
        &mut xdp,
        &[1, 3, 8, 2],
        soft_state(1_000),
        SEALING_ON,
        &events,
    );
    assert!(
        c.expired > 0 && c.drop_replayed > 0 && c.drop_bad_seal > 0 && c.resubmissions > 0,
        "{c:?}"
    );
    let order: Vec<u32> = (events.iter().enumerate())
        .filter_map(|(seq, &(event, how))| {
            if let Event::Tick { .. } = event {
                return None;
            }
            let (_, bytes) = datagram(event, seq as u16, how);
            takes_ticket(SEALING_ON.as_ref(), event, &bytes).then(|| pass_key(&bytes))
        })
        .collect();
    let stats = xdp.pass_lock_stats().expect("pass lock");
    assert_eq!(
        (stats.tickets, stats.busy, stats.held),
        (order.len() as u64, 0, false)
    );
    assert_eq!(xdp.pass_order(0).expect("order"), order);
}

/// One packet a thread sends: its header's seq (unique in a round, the
/// log's key), the event and its seal.
type Sent = (u16, Event, SealAs);

/// Threads on different CPUs run random tasks, multi-packet tasks' packets,
/// notices (sealed, replayed, forged, unsealed; from every rack but one per
/// round, which soft state then forgets) and replies through one program
/// at once (`BPF_PROG_TEST_RUN`, the pass lock on), sealing on in two
/// rounds of three. After each round: every packet that runs passes took
/// exactly one ticket or was counted as given up (none lost, none run
/// twice); replayed in ticket order through the socket daemon's seal and
/// replay rule and the sans-IO spine (its soft-state expiry first, at the
/// round's clock), each packet's outcome is the one its thread saw, and
/// every register array, the connection table and the random stream
/// agree; at the end the counters do.
#[test]
fn concurrent_cpus_are_the_sans_io_spine_in_lock_order() {
    let test = "concurrent_cpus_are_the_sans_io_spine_in_lock_order";
    let Some(mut xdp) = bpf_spine(test) else {
        return;
    };
    const THREADS: usize = 2;
    const PER_THREAD: usize = 1_000;
    const ROUNDS: usize = 6;
    const WINDOW: usize = 16;
    // The round's clock steps by 1,000 ns: a rack silent for a round is
    // forgotten at the next one's start.
    const STEP: u64 = 1_000;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let racks = [2, 3, 4, 2];
    let n = racks.len() as u32;
    let mut spine = HorusSpine::with_options(&racks, SEED, CONN, soft_state(1_500));
    let addrs: Vec<RackAddr> = (0..n).map(rack_addr).collect();
    xdp.install(&spine, SWITCH_MAC, &addrs).expect("install");
    xdp.set_every_cpu(true).expect("every cpu");
    xdp.set_pass_order_log(true).expect("order log");
    let start = xdp.counters().expect("counters");
    let conn_start = xdp.conn_counters().expect("counters");
    let runner = xdp.runner().expect("runner");
    let mut rng = Rng::new(37);
    let (mut expected, mut conn) = (SpineCounters::default(), ConnCounters::default());
    let mut replay = ReplayGuard::default();
    let (mut switches, mut busy) = (0, 0);
    for round in 0..ROUNDS {
        let key = (round % 3 != 2).then_some(KEY);
        xdp.set_notice_key(key.map(|k| k.0)).expect("key");
        let now = STEP * (round as u64 + 1);
        xdp.set_clock(Nanos::new(now)).expect("clock");
        xdp.set_conn_clock(Some(Nanos::new(now))).expect("clock");
        // The first packet of the round runs the expiry, before any
        // packet's passes.
        reference_at(&mut spine, now, Event::Tick { now }, 0, &mut expected);
        let silent = round as u32 % n;
        let streams: Vec<Vec<Sent>> = (0..THREADS)
            .map(|t| {
                (0..PER_THREAD)
                    .map(|i| {
                        let at = (round * THREADS + t) * PER_THREAD + i;
                        // Both threads' fresh numbers grow, interleaved.
                        let fresh = ((round * PER_THREAD + i) * THREADS + t) as u64;
                        let event = random_event(&mut rng, n, silent);
                        (at as u16, event, random_seal(&mut rng, fresh))
                    })
                    .collect()
            })
            .collect();
        let before = xdp.pass_lock_stats().expect("pass lock");
        // No thread runs more than WINDOW packets ahead of the other, so
        // the lock order interleaves them whatever the machine does.
        let seen = common::run_in_step(&streams, WINDOW, |&(seq, event, how)| {
            let (from, bytes) = datagram(event, seq, how);
            let run = runner.test_run(&frame(from, &bytes), 1).expect("test run");
            (seq, outcome_of(event, seq, &run))
        });
        let after = xdp.pass_lock_stats().expect("pass lock");
        let order = xdp.pass_order(before.tickets).expect("order");
        let sent: BTreeMap<u16, (usize, Event, SealAs)> = (streams.iter().enumerate())
            .flat_map(|(t, s)| s.iter().map(move |&(seq, e, how)| (seq, (t, e, how))))
            .collect();
        let outcomes: BTreeMap<u16, Outcome> = seen.into_iter().flatten().collect();
        let bytes = |seq: u16| {
            let (_, event, how) = sent[&seq];
            datagram(event, seq, how).1
        };
        let ticketed = (sent.iter())
            .filter(|&(&seq, &(_, event, _))| takes_ticket(key.as_ref(), event, &bytes(seq)))
            .count() as u64;
        // No packet lost or run twice, and each under its own key.
        let given_up = after.busy - before.busy;
        assert_eq!(order.len() as u64 + given_up, ticketed, "round {round}");
        let mut ran = BTreeSet::new();
        for &k in &order {
            let seq = k as u16;
            assert!(
                sent.contains_key(&seq) && pass_key(&bytes(seq)) == k && ran.insert(seq),
                "round {round}: key {k:#x}"
            );
        }
        busy += given_up;
        // Replay in lock order.
        let (mut last_thread, switches_before) = (None, switches);
        for &k in &order {
            let seq = k as u16;
            let (thread, event, _) = sent[&seq];
            switches += u64::from(last_thread.is_some_and(|t| t != thread));
            last_thread = Some(thread);
            let path = (key.as_ref(), &mut replay, &mut expected);
            let want = socket_path(&mut spine, now, path, (event, seq), &bytes(seq));
            tally_continuation(&mut conn, event, &want);
            assert_eq!(
                outcomes[&seq], want,
                "round {round}, packet {seq}: {event:?}"
            );
        }
        // The rest: replies passed up, notices whose seal failed dropped
        // (counted outside the passes, in any order), and packets given up
        // (a task dropped, a notice lost).
        for (&seq, &(_, event, _)) in sent.iter().filter(|(seq, _)| !ran.contains(seq)) {
            let want = if takes_ticket(key.as_ref(), event, &bytes(seq)) {
                match event {
                    Event::Task { .. } | Event::First { .. } | Event::Cont { .. } => {
                        Outcome::Dropped
                    }
                    _ => Outcome::Consumed,
                }
            } else if let Event::Reply = event {
                reference_at(&mut spine, now, event, seq, &mut expected)
            } else {
                let dropped = socket_unseal(key.as_ref(), &mut replay, &bytes(seq), &mut expected);
                assert!(dropped.is_none(), "{event:?}");
                Outcome::Consumed
            };
            assert_eq!(
                outcomes[&seq], want,
                "round {round}, packet {seq}: {event:?}"
            );
        }
        assert_same_state(&spine, &mut xdp, round);
        spine.idle_nodes().check_invariant().expect("idle list");
        assert!(!after.held, "the lock is free when no packet runs");
        // The threads' passes interleaved: neither finished before the
        // other started (each ran at most WINDOW packets ahead). Packets
        // that take no ticket let a thread's run of tickets grow past the
        // leaf test's 2·WINDOW + 2 bound, so only this much is certain.
        assert!(switches > switches_before, "round {round}: no switch");
    }
    conn.overflows = spine.conn_table().overflows;
    assert_eq!(conn_since(&mut xdp, &conn_start), conn, "connection table");
    let now = xdp.counters().expect("counters");
    assert_eq!(delta(now, start), expected, "counters");
    assert!(
        expected.expired > 0
            && expected.drop_replayed > 0
            && expected.drop_bad_seal > 0
            && expected.dispatch_idle > 0
            && expected.dispatch_sampled > 0
            && conn.followed > 0,
        "{expected:?} {conn:?}"
    );
    println!(
        "{THREADS} threads on {cpus} CPUs: {switches} switches between threads in lock order, \
         {busy} packets given up"
    );
}
