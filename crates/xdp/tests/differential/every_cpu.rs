//! The leaf on every CPU (docs/xdp.md, "Every CPU"): with the pass lock
//! on, one CPU's packets match the sans-IO leaf in order, and threads on
//! two CPUs match it in the order they took the lock.

use super::*;

/// The clock of the concurrent runs: fixed, so that replaying the packets
/// in lock order needs no clock per packet.
const CONCURRENT_NOW: u64 = 1_000_000;

/// A random task or reply; replies to `workers` (one past the rack: an
/// unknown worker) or, with `only`, to the workers of that parity.
fn random_event(rng: &mut netsched_core::rng::Rng, workers: u32, only: Option<u32>) -> Event {
    if rng.below(2) == 0 {
        return Event::Task {
            idle_selected: rng.below(4) == 0,
        };
    }
    let node = match only {
        Some(parity) => 2 * rng.below(workers / 2) + parity,
        None => rng.below(workers + 1),
    };
    Event::Reply {
        node,
        qlen: rng.below(4) as u16,
    }
}

/// Each worker is listed as often as it is on the idle list (leaf.rs keeps
/// `listed` for that): the list and the member counts moved together.
fn assert_idle_list_consistent(xdp: &mut XdpLeaf, workers: u32, step: usize) {
    let p = xdp.read_array("idle.p", 1).expect("idle.p")[0];
    let list = xdp.read_array("idle.list", p as usize).expect("idle.list");
    let listed = xdp
        .read_array("leaf.listed", workers as usize)
        .expect("leaf.listed");
    for (w, &count) in listed.iter().enumerate() {
        let on_list = list.iter().filter(|&&n| n == w as u64).count() as u64;
        assert_eq!(
            count, on_list,
            "after {step}: worker {w} listed {count}, on the list {on_list}: {list:?}"
        );
    }
}

/// The random sequence with the pass lock on and its order log kept, one
/// CPU: the lock changes nothing a packet sees, and every packet took one
/// ticket, in the order sent.
#[test]
fn with_the_pass_lock_on_packets_match_the_sans_io_leaf_in_order() {
    let test = "with_the_pass_lock_on_packets_match_the_sans_io_leaf_in_order";
    let Some(mut xdp) = bpf_leaf(test) else {
        return;
    };
    xdp.set_every_cpu(true).expect("every cpu");
    xdp.set_pass_order_log(true).expect("order log");
    let mut rng = netsched_core::rng::Rng::new(43);
    // A quarter are packets of multi-packet tasks (4 in progress at a time),
    // so the connection table runs under the lock too.
    let events = with_gaps(&mut rng, 1_500, |rng| match rng.below(8) {
        0 => Event::First {
            conn: rng.below(4) as u8,
            idle_selected: false,
        },
        1 => Event::Cont {
            conn: rng.below(4) as u8,
            last: rng.below(3) == 0,
        },
        _ => random_event(rng, 6, None),
    });
    let tally = differential_in(&mut xdp, FORWARDING, 6, &events);
    assert!(tally.conn.followed > 0, "{tally:?}");
    assert!(
        tally.pow2_resubmissions > 0 && tally.retries > 0 && tally.relists > 0,
        "{tally:?}"
    );
    assert_idle_list_consistent(&mut xdp, 6, events.len());
    let stats = xdp.pass_lock_stats().expect("pass lock");
    assert_eq!(
        (stats.tickets, stats.busy, stats.held),
        (events.len() as u64, 0, false)
    );
    // The log's key is the task id's low word (a reply's is its task's).
    let order: Vec<u32> = (events.iter().enumerate())
        .map(|(seq, &(_, event))| FORWARDING.task_id(event, seq as u16) as u32)
        .collect();
    assert_eq!(xdp.pass_order(0).expect("order"), order);
}

/// Threads on different CPUs run random tasks and replies through one
/// program at once (`BPF_PROG_TEST_RUN`, the pass lock on), over replies to
/// the same workers (overlapping rounds) and to disjoint halves of the rack.
/// After each round: every packet took exactly one ticket or was counted
/// as given up (none lost, none run twice); replayed through the sans-IO
/// leaf in ticket order, each packet's outcome is the one its thread saw,
/// the notices are the queue's in order, and every register array and the
/// random stream agree; the idle list matches the `listed` counts.
#[test]
fn concurrent_cpus_are_the_sans_io_leaf_in_lock_order() {
    let test = "concurrent_cpus_are_the_sans_io_leaf_in_lock_order";
    let Some(mut xdp) = bpf_leaf(test) else {
        return;
    };
    const THREADS: usize = 2;
    const PER_THREAD: usize = 1_000;
    const ROUNDS: usize = 6;
    const WINDOW: usize = 16;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = 6;
    let mut leaf = installed_leaf(&mut xdp, workers);
    xdp.set_clock(Nanos::new(CONCURRENT_NOW)).expect("clock");
    xdp.set_every_cpu(true).expect("every cpu");
    xdp.set_pass_order_log(true).expect("order log");
    let start = xdp.counters().expect("counters");
    let runner = xdp.runner().expect("runner");
    let mut rng = netsched_core::rng::Rng::new(31);
    let (mut tally, mut switches, mut busy) = (Tally::default(), 0, 0);
    for round in 0..ROUNDS {
        let disjoint = round % 2 == 1;
        // Thread t's packets: seq (the task id, the log's key) is unique.
        let streams: Vec<Vec<(u16, Event)>> = (0..THREADS)
            .map(|t| {
                (0..PER_THREAD)
                    .map(|i| {
                        let seq = ((round * THREADS + t) * PER_THREAD + i) as u16;
                        let only = disjoint.then_some(t as u32);
                        (seq, random_event(&mut rng, workers, only))
                    })
                    .collect()
            })
            .collect();
        let before = xdp.pass_lock_stats().expect("pass lock");
        // None runs more than WINDOW packets ahead of the other, so the
        // lock order interleaves them whatever the machine's scheduler does.
        let seen = common::run_in_step(&streams, WINDOW, |&(seq, event)| {
            let run = runner
                .test_run(&packet(PLAIN, event, seq), 1)
                .expect("test run");
            let outcome = match run.action {
                XdpAction::Tx => Outcome::Dispatched(forwarded_to(&run.frame).expect("forwarded")),
                XdpAction::Pass => Outcome::ReplyPassed,
                XdpAction::Drop => Outcome::Dropped,
                other => panic!("{event:?} came out as {other:?}"),
            };
            (seq, outcome)
        });
        let after = xdp.pass_lock_stats().expect("pass lock");
        let order = xdp.pass_order(before.tickets).expect("order");
        let events: std::collections::BTreeMap<u16, (usize, Event)> = streams
            .iter()
            .enumerate()
            .flat_map(|(t, stream)| stream.iter().map(move |&(seq, e)| (seq, (t, e))))
            .collect();
        let outcomes: std::collections::BTreeMap<u16, Outcome> =
            seen.into_iter().flatten().collect();
        // No packet lost or run twice.
        let given_up = after.busy - before.busy;
        assert_eq!(order.len() as u64 + given_up, (THREADS * PER_THREAD) as u64);
        let mut ran = std::collections::BTreeSet::new();
        for &key in &order {
            let seq = u16::try_from(key).expect("a key this round sent");
            assert!(
                events.contains_key(&seq) && ran.insert(seq),
                "key {key} in {order:?}"
            );
        }
        busy += given_up;
        // Replay in lock order.
        let mut notices = Vec::new();
        let mut last_thread = None;
        let switches_before = switches;
        for &key in &order {
            let seq = key as u16;
            let (thread, event) = events[&seq];
            switches += u64::from(last_thread.is_some_and(|t| t != thread));
            last_thread = Some(thread);
            let (expected, sent) =
                reference(&mut leaf, PLAIN, CONCURRENT_NOW, event, seq, &mut tally);
            assert_eq!(
                outcomes[&seq], expected,
                "round {round}, packet {seq}: {event:?}"
            );
            notices.extend(sent);
        }
        // A packet given up: a task dropped, a reply passed up unapplied.
        for (seq, &(_, event)) in events.iter().filter(|(seq, _)| !ran.contains(seq)) {
            let expected = match event {
                Event::Task { .. } | Event::First { .. } | Event::Cont { .. } => Outcome::Dropped,
                Event::Reply { .. } => Outcome::ReplyPassed,
            };
            assert_eq!(outcomes[seq], expected, "given up: {event:?}");
        }
        assert_eq!(
            xdp.drain_notices().expect("notices"),
            notices,
            "round {round}"
        );
        assert_same_state(&leaf, &mut xdp, round);
        assert_idle_list_consistent(&mut xdp, workers, round);
        assert!(!after.held, "the lock is free when no packet runs");
        // A thread's run of tickets is at most 2·WINDOW + 2 long: it runs
        // at most WINDOW past what the other completed, which completes
        // nothing more without a ticket (unless it gave a packet up) but the
        // one it had in flight, and was itself at most WINDOW + 1 ahead.
        if given_up == 0 {
            let runs = (THREADS * PER_THREAD).div_ceil(2 * WINDOW + 2) as u64;
            assert!(
                switches - switches_before >= runs - 1,
                "round {round}: {} switches",
                switches - switches_before
            );
        }
    }
    assert_same_counters(&mut xdp, &start, &leaf);
    assert!(
        tally.pow2_resubmissions > 0 && tally.retries > 0,
        "{tally:?}"
    );
    println!(
        "{THREADS} threads on {cpus} CPUs: {switches} switches between threads in lock order, \
         {busy} packets given up"
    );
}
