//! The client's options beyond one Poisson stream (issue 3: "several
//! threads, rate schedule, multi-packet tasks, per-task timeout and
//! resubmission"), over real loopback sockets.

mod common;

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{cluster, sock};
use netsched_node::config::{ClientConfig, PolicyName, RateStep, Target};
use netsched_node::Client;
use netsched_proto::{HorusBody, HorusHeader, HorusMessage, HorusReply, Message, ReplyStatus};
use netsched_sim::workload::ServiceDist;

fn client(target: SocketAddr, rate: f64, ms: u64) -> ClientConfig {
    ClientConfig {
        targets: vec![Target {
            addr: target,
            weight: 1.0,
        }],
        pool: 5,
        app_id: 20,
        rate,
        duration_ms: ms,
        service: ServiceDist::Fixed { value_us: 100.0 },
        timeout_ms: 1000,
        seed: 3,
        ..Default::default()
    }
}

#[test]
fn multi_packet_tasks_run_once_each_through_spine_and_leaf() {
    // Horus §A.4: continuation packets follow the first one to the worker
    // it was scheduled to; the worker runs the task on its last packet.
    let c = cluster(5, 2, 2, PolicyName::Horus);
    let mut cfg = client(c.spine, 400.0, 600);
    cfg.packets = 3;
    let r = Client::bind(cfg).unwrap().run();
    let workers = c.worker_metrics.clone();
    c.shutdown().unwrap();
    eprintln!("{}", r.summary());
    assert!(r.submitted > 100, "{}", r.summary());
    assert_eq!(r.completed, r.submitted, "{}", r.summary());
    assert_eq!(r.duplicate_replies + r.unknown_replies, 0);
    let tasks: u64 = workers
        .iter()
        .map(|w| w.sum("netsched_worker_tasks_total"))
        .sum();
    let fragments: u64 = workers
        .iter()
        .map(|w| w.sum("netsched_worker_fragments_total"))
        .sum();
    // Every continuation reached the worker of its first packet: a stray one
    // would have been run as a task of its own or dropped.
    assert_eq!(tasks, r.submitted);
    assert_eq!(fragments, 2 * r.submitted);
}

#[test]
fn several_threads_share_the_rate_and_get_their_own_replies() {
    let c = cluster(5, 2, 2, PolicyName::Horus);
    let mut cfg = client(c.spine, 1200.0, 600);
    cfg.threads = 3;
    let r = Client::bind(cfg).unwrap().run();
    c.shutdown().unwrap();
    eprintln!("{}", r.summary());
    // 3 streams of 400/s for 0.6 s: ≈ 720 tasks in all (Poisson).
    assert!((550..900).contains(&r.submitted), "{}", r.summary());
    assert_eq!(r.completed, r.submitted, "{}", r.summary());
    // Replies are routed by app id: each went to the thread that sent it.
    assert_eq!(r.unknown_replies + r.duplicate_replies, 0);
}

/// A fake worker that answers a task only on its `nth` arrival (1-based),
/// ignoring earlier copies: stands in for a lost datagram.
fn lossy_echo(nth: usize, stop: Arc<AtomicBool>) -> (SocketAddr, std::thread::JoinHandle<()>) {
    let s = sock();
    s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    let addr = s.local_addr().unwrap();
    let h = std::thread::spawn(move || {
        let mut seen: HashMap<u64, usize> = HashMap::new();
        let mut buf = [0u8; 2048];
        while !stop.load(Ordering::Relaxed) {
            let Ok((n, from)) = s.recv_from(&mut buf) else {
                continue;
            };
            let Ok(Message::Horus(m)) = Message::decode(&buf[..n]) else {
                continue;
            };
            let HorusBody::TaskFirst(t) = m.body else {
                continue;
            };
            let k = seen.entry(t.task_id).or_default();
            *k += 1;
            if *k == nth {
                reply(&s, from, t.task_id);
            }
        }
    });
    (addr, h)
}

fn reply(s: &UdpSocket, to: SocketAddr, task_id: u64) {
    let m = Message::Horus(HorusMessage {
        header: HorusHeader {
            pool_id: 5,
            ..Default::default()
        },
        body: HorusBody::Reply(HorusReply {
            task_id,
            status: ReplyStatus::Ok,
            payload: b"",
        }),
    });
    s.send_to(&m.to_vec().unwrap(), to).unwrap();
}

#[test]
fn timed_out_tasks_are_resubmitted_and_counted_from_the_first_send() {
    let stop = Arc::new(AtomicBool::new(false));
    let (addr, h) = lossy_echo(2, stop.clone());
    let mut cfg = client(addr, 200.0, 300);
    cfg.timeout_ms = 40;
    cfg.retries = 2;
    let with = Client::bind(cfg.clone()).unwrap().run();
    cfg.retries = 0;
    cfg.app_id = 21;
    let without = Client::bind(cfg).unwrap().run();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    eprintln!("with retries: {}", with.summary());
    eprintln!("without: {}", without.summary());
    assert!(with.submitted > 20);
    // Every first copy is ignored: each task needs exactly one resubmission.
    assert_eq!(with.completed, with.submitted, "{}", with.summary());
    assert_eq!(with.resubmitted, with.submitted);
    assert!(with.accounted());
    // Latency runs from the first intended send, so it includes the timeout.
    assert!(with.percentile_us(0.0) >= 40_000.0, "{}", with.summary());
    // Without retries the same loss times every task out, all accounted for.
    assert_eq!(
        without.timed_out,
        without.submitted,
        "{}",
        without.summary()
    );
    assert_eq!(without.resubmitted, 0);
    assert!(without.accounted());
}

#[test]
fn a_rate_schedule_changes_the_submission_rate() {
    let stop = Arc::new(AtomicBool::new(false));
    let (addr, h) = lossy_echo(1, stop.clone());
    // 100/s for the first 500 ms, then 1,000/s: ≈ 50 + 500 tasks.
    let mut cfg = client(addr, 100.0, 1000);
    cfg.schedule = vec![RateStep {
        at_ms: 500,
        rate: 1000.0,
    }];
    let stepped = Client::bind(cfg.clone()).unwrap().run();
    cfg.schedule.clear();
    cfg.app_id = 22;
    let flat = Client::bind(cfg).unwrap().run();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    eprintln!("stepped: {}\nflat: {}", stepped.summary(), flat.summary());
    assert!(
        (430..680).contains(&stepped.submitted),
        "{}",
        stepped.summary()
    );
    assert!((60..150).contains(&flat.submitted), "{}", flat.summary());
    assert_eq!(stepped.completed, stepped.submitted);
    assert_eq!(flat.completed, flat.submitted);
}
