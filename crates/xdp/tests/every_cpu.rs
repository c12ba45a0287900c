//! The Horus leaf and spine on every CPU (docs/xdp.md, "Every CPU") beside
//! the differential tests' concurrent runs (tests/differential/every_cpu.rs,
//! tests/spine_differential/every_cpu.rs): what runs outside the pass lock
//! (sealing) under concurrent CPUs, and each program's decision rate on one
//! CPU against every CPU, side by side.
//!
//! Needs root (loading BPF programs). Without it the tests print why and
//! pass, unless NETSCHED_REQUIRE_BPF=1.

mod common;

use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Instant;

use netsched_core::horus::{ConnTableConfig, HorusLeaf, HorusSpine};
use netsched_proto::{HorusBody, HorusHeader, HorusMessage, HorusReply, Message, ReplyStatus};
use netsched_xdp::{ProgramRunner, RackAddr, WorkerAddr, XdpAction, XdpLeaf, XdpSpine};

const WORKERS: u32 = 8;
const CLIENT: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 5000);

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A leaf of 8 busy workers (the idle list emptied: every task a lazy
/// power-of-2 decision), the pass lock on with `every_cpu`, tasks sealed
/// with `sealed`.
fn busy_leaf(test: &str, every_cpu: bool, sealed: bool) -> Option<(XdpLeaf, Vec<u8>)> {
    let mut xdp = common::load_program(test, "leaf", XdpLeaf::load)?;
    let leaf = HorusLeaf::new(WORKERS, 0x5eed, ConnTableConfig::default());
    let addrs: Vec<WorkerAddr> = (0..WORKERS)
        .map(|n| WorkerAddr {
            mac: [2, 0, 0, 0, 1, n as u8],
            ip: Ipv4Addr::new(10, 0, 1, n as u8 + 1),
            port: 9000,
        })
        .collect();
    xdp.install(&leaf, common::SWITCH_MAC, &addrs)
        .expect("install");
    xdp.set_every_cpu(every_cpu).expect("every cpu");
    xdp.set_task_key(sealed.then_some([7; 16]), 1)
        .expect("task key");
    let task = common::frame(CLIENT, &common::horus_task(1, 0, b"key"));
    for _ in 0..WORKERS {
        let run = xdp.test_run(&task, 1).expect("test run");
        assert_eq!(run.action, XdpAction::Tx);
    }
    Some((xdp, task))
}

/// A spine of 8 racks of `WORKERS` workers, each rack's leaf having
/// removed it from the idle list (every task a lazy power-of-2 decision),
/// the pass lock on with `every_cpu`; and a task from a client.
fn busy_spine(test: &str, every_cpu: bool) -> Option<(XdpSpine, Vec<u8>)> {
    const RACKS: u32 = 8;
    let mut xdp = common::load_program(test, "spine", XdpSpine::load)?;
    let spine = HorusSpine::new(
        &[WORKERS; RACKS as usize],
        0x5eed,
        ConnTableConfig::default(),
    );
    let leaf = |r: u32| SocketAddrV4::new(Ipv4Addr::new(10, 0, 2, r as u8 + 1), 7100);
    let addrs: Vec<RackAddr> = (0..RACKS)
        .map(|r| RackAddr {
            mac: common::mac_of(leaf(r)),
            ip: *leaf(r).ip(),
            port: leaf(r).port(),
        })
        .collect();
    xdp.install(&spine, common::SWITCH_MAC, &addrs)
        .expect("install");
    xdp.set_every_cpu(every_cpu).expect("every cpu");
    for r in 0..RACKS {
        let header = HorusHeader {
            pool_id: 1,
            src_id: r as u16,
            ..HorusHeader::default()
        };
        let body = HorusBody::IdleRemove;
        let remove = Message::Horus(HorusMessage { header, body }).to_vec();
        let remove = common::frame(leaf(r), &remove.expect("encode"));
        let run = xdp.test_run(&remove, 1).expect("test run");
        assert_eq!(run.action, XdpAction::Drop);
    }
    assert_eq!(xdp.counters().expect("counters").idle_removes, 8);
    let task = common::frame(CLIENT, &common::horus_task(1, 0, b"key"));
    Some((xdp, task))
}

/// `threads` threads (pinned to different CPUs) each run `task` `runs` times
/// at once: in one `BPF_PROG_TEST_RUN` repeating it, or with `one_by_one`
/// one call per run (a sealed task grows the frame, which a repeat would
/// run again). Returns the decisions per second of them all together.
fn run_at_once(
    runner: &ProgramRunner,
    task: &[u8],
    threads: usize,
    runs: u32,
    one_by_one: bool,
) -> f64 {
    let barrier = std::sync::Barrier::new(threads);
    let cpus = cpus();
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    common::pin(t % cpus);
                    barrier.wait();
                    let start = Instant::now();
                    let (calls, repeat) = if one_by_one { (runs, 1) } else { (1, runs) };
                    for _ in 0..calls {
                        let run = runner.test_run(task, repeat).expect("test run");
                        assert_eq!(run.action, XdpAction::Tx);
                    }
                    (start, Instant::now())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    let start = spans.iter().map(|s| s.0).min().expect("a thread");
    let end = spans.iter().map(|s| s.1).max().expect("a thread");
    (threads as f64 * f64::from(runs)) / (end - start).as_secs_f64()
}

/// Sealing runs outside the pass lock on every CPU at once: each sealed
/// task takes its own sequence number (the sealer's atomic add), so the
/// counter ends exactly 2 per task further, and each dispatch was counted.
#[test]
fn cpus_sealing_at_once_take_distinct_sequence_numbers() {
    let test = "cpus_sealing_at_once_take_distinct_sequence_numbers";
    let Some((mut xdp, task)) = busy_leaf(test, true, true) else {
        return;
    };
    let (threads, runs) = (2, 5_000);
    let before = xdp.task_seq().expect("seq");
    let dispatched = |x: &mut XdpLeaf| {
        let c = x.counters().expect("counters");
        c.dispatch_idle + c.dispatch_sampled
    };
    let d0 = dispatched(&mut xdp);
    run_at_once(&xdp.runner().expect("runner"), &task, threads, runs, true);
    let total = threads as u64 * u64::from(runs);
    assert_eq!(xdp.task_seq().expect("seq") - before, 2 * total);
    assert_eq!(dispatched(&mut xdp) - d0, total);
    let lock = xdp.pass_lock_stats().expect("pass lock");
    assert_eq!(lock.busy, 0, "{lock:?}");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The busy path's decision rate, one CPU against every CPU, in one run:
/// the program alone through `BPF_PROG_TEST_RUN` (no cpumap hop, no
/// interface), medians of 5 trials of 10^6 decisions per thread, trials
/// interleaved. Run with
/// `cargo test --release -p netsched-xdp --test every_cpu decision_rate -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn decision_rate_one_cpu_against_every_cpu() {
    let test = "decision_rate_one_cpu_against_every_cpu";
    let runs = 1_000_000;
    let threads = cpus().min(4);
    println!(
        "{threads} threads on {} CPUs; M decisions/s (all threads together), median of 5",
        cpus()
    );
    let Some((mut one, task)) = busy_leaf(test, false, false) else {
        return;
    };
    let (mut locked, _) = busy_leaf(test, true, false).expect("loaded once");
    let one = one.runner().expect("runner");
    let locked_runner = locked.runner().expect("runner");
    let rates = side_by_side(&one, &locked_runner, &task, threads, runs);
    let busy = locked.pass_lock_stats().expect("pass lock").busy;
    println!("leaf: {rates} ({busy} given up)");
}

/// One CPU without the lock, the pass lock with 1 thread, with `threads`:
/// medians of 5 interleaved trials of `runs` decisions per thread, M/s.
fn side_by_side(
    one: &ProgramRunner,
    locked: &ProgramRunner,
    task: &[u8],
    threads: usize,
    runs: u32,
) -> String {
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..5 {
        a.push(run_at_once(one, task, 1, runs, false) / 1e6);
        b.push(run_at_once(locked, task, 1, runs, false) / 1e6);
        c.push(run_at_once(locked, task, threads, runs, false) / 1e6);
    }
    format!(
        "one CPU (no lock) {:.2}; pass lock, 1 thread {:.2}; pass lock, {threads} threads {:.2}",
        median(a),
        median(b),
        median(c),
    )
}

/// The spine's busy-path decision rate (lazy power-of-2 over 8 racks, no
/// idle rack), one CPU against every CPU, as the leaf's above. Run with
/// `cargo test --release -p netsched-xdp --test every_cpu decision_rate -- --ignored --nocapture`
/// (both programs).
#[test]
#[ignore = "a measurement, not a check"]
fn spine_decision_rate_one_cpu_against_every_cpu() {
    let test = "spine_decision_rate_one_cpu_against_every_cpu";
    let runs = 1_000_000;
    let threads = cpus().min(4);
    let Some((mut one, task)) = busy_spine(test, false) else {
        return;
    };
    let (mut locked, _) = busy_spine(test, true).expect("loaded once");
    let one_runner = one.runner().expect("runner");
    let locked_runner = locked.runner().expect("runner");
    let rates = side_by_side(&one_runner, &locked_runner, &task, threads, runs);
    let busy = locked.pass_lock_stats().expect("pass lock").busy;
    let dispatched = one.counters().expect("counters").dispatch_sampled
        + locked.counters().expect("counters").dispatch_sampled;
    assert_eq!(
        dispatched + busy,
        u64::from(runs) * 5 * (2 + threads as u64)
    );
    println!("spine, {threads} threads on {} CPUs, M decisions/s (all threads together), median of 5: {rates} ({busy} given up)", cpus());
}

/// `packets` through the program the tests check against the sans-IO model
/// (`xdp`) and through the one `attach_every_cpu` attaches (`every`, loaded
/// and installed alike): the same verdicts and frames, but what the first
/// sends back out with `XDP_TX` the second redirects (bpf/steer.h,
/// `DEFINE_REDIRECTING`: a veth's peer collects `XDP_TX` frames only if it
/// runs XDP itself). Returns the verdicts seen.
fn same_passes_but_redirected(
    model_checked: &ProgramRunner,
    every: &ProgramRunner,
    packets: &[Vec<u8>],
) -> Vec<XdpAction> {
    packets
        .iter()
        .map(|packet| {
            let checked = model_checked.test_run(packet, 1).expect("test run");
            let run = every.test_run(packet, 1).expect("test run");
            let expected = match checked.action {
                XdpAction::Tx => XdpAction::Redirect,
                other => other,
            };
            assert_eq!(run.action, expected, "verdict");
            assert_eq!(run.frame, checked.frame, "frame");
            checked.action
        })
        .collect()
}

#[test]
fn the_every_cpu_leaf_redirects_what_it_sends_back_and_passes_the_rest() {
    let test = "the_every_cpu_leaf_redirects_what_it_sends_back_and_passes_the_rest";
    let Some((mut checked, task)) = busy_leaf(test, true, false) else {
        return;
    };
    let (mut every, _) = busy_leaf(test, true, false).expect("loaded once");
    let worker = SocketAddrV4::new(Ipv4Addr::new(10, 0, 1, 1), 9000);
    let reply = Message::Horus(HorusMessage {
        header: HorusHeader {
            pool_id: 1,
            src_id: 0,
            qlen: 3,
            ..HorusHeader::default()
        },
        body: HorusBody::Reply(HorusReply {
            task_id: 1,
            status: ReplyStatus::Ok,
            payload: b"value",
        }),
    });
    let reply = common::frame(worker, &reply.to_vec().expect("encode"));
    let not_horus = common::frame(CLIENT, b"not a horus message");
    let packets = [task.clone(), reply, not_horus, task];
    let verdicts = same_passes_but_redirected(
        &checked.runner().expect("runner"),
        &every.every_cpu_runner().expect("every-CPU runner"),
        &packets,
    );
    assert_eq!(verdicts[0], XdpAction::Tx, "a task is sent on");
    assert_eq!(verdicts[2], XdpAction::Pass, "a foreign datagram goes up");
}

#[test]
fn the_every_cpu_spine_redirects_what_it_sends_back_and_passes_the_rest() {
    let test = "the_every_cpu_spine_redirects_what_it_sends_back_and_passes_the_rest";
    let Some((mut checked, task)) = busy_spine(test, true) else {
        return;
    };
    let (mut every, _) = busy_spine(test, true).expect("loaded once");
    let not_horus = common::frame(CLIENT, b"not a horus message");
    let packets = [task.clone(), not_horus, task];
    let verdicts = same_passes_but_redirected(
        &checked.runner().expect("runner"),
        &every.every_cpu_runner().expect("every-CPU runner"),
        &packets,
    );
    assert_eq!(verdicts[0], XdpAction::Tx, "a task is sent on");
    assert_eq!(verdicts[1], XdpAction::Pass, "a foreign datagram goes up");
}
