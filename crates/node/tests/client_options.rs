//! The client's options beyond one Poisson stream ("several
//! threads, rate schedule, multi-packet tasks, per-task timeout and
//! resubmission"), and spines learned from the controller's admin API,
//! over real loopback sockets.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{cluster, sock};
use netsched_config::workload::ServiceDist;
use netsched_node::config::{ClientConfig, Policy, RateStep, Target};
use netsched_node::Client;
use netsched_proto::{HorusBody, HorusHeader, HorusMessage, HorusReply, Message, ReplyStatus};

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
    let c = cluster(5, 2, 2, Policy::Horus);
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
    let c = cluster(5, 2, 2, Policy::Horus);
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

/// An echo "spine" that answers every task and counts them.
fn counting_echo(stop: Arc<AtomicBool>) -> (SocketAddr, Arc<AtomicU64>) {
    let s = sock();
    s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    let addr = s.local_addr().unwrap();
    let count = Arc::new(AtomicU64::new(0));
    let c = count.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while !stop.load(Ordering::Relaxed) {
            let Ok((n, from)) = s.recv_from(&mut buf) else {
                continue;
            };
            if let Ok(Message::Horus(HorusMessage {
                body: HorusBody::TaskFirst(t),
                ..
            })) = Message::decode(&buf[..n])
            {
                c.fetch_add(1, Ordering::Relaxed);
                reply(&s, from, t.task_id);
            }
        }
    });
    (addr, count)
}

/// A stand-in for the controller's admin API: `GET /v1/topology` answers
/// the current body to requests with the right bearer token, 401 otherwise.
fn fake_admin(
    token: &'static str,
    body: Arc<Mutex<String>>,
    stop: Arc<AtomicBool>,
) -> (SocketAddr, Arc<AtomicU64>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let addr = l.local_addr().unwrap();
    let polls = Arc::new(AtomicU64::new(0));
    let p = polls.clone();
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let Ok((mut s, _)) = l.accept() else {
                std::thread::sleep(Duration::from_millis(2));
                continue;
            };
            s.set_nonblocking(false).unwrap();
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            let req = String::from_utf8_lossy(&req);
            p.fetch_add(1, Ordering::Relaxed);
            let authorized = req.starts_with("GET /v1/topology ")
                && req.contains(&format!("Authorization: Bearer {token}\r\n"));
            let (status, body) = if authorized {
                ("200 OK", body.lock().unwrap().clone())
            } else {
                ("401 Unauthorized", "{}".to_string())
            };
            let _ = write!(
                s,
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (addr, polls)
}

fn topology(alive: SocketAddr, dead: SocketAddr) -> String {
    format!(
        "{{\"pools\": [{{\"id\": 5, \"spines\": [\
         {{\"addr\": \"{dead}\", \"alive\": false, \"weight\": 0.0}}, \
         {{\"addr\": \"{alive}\", \"alive\": true, \"weight\": 1.0}}]}}]}}"
    )
}

/// Horus §3.2/§A.3: a client with `[controller]` submits only to the spines
/// the controller reports live, learns them before its first task, and
/// follows a change within a poll; with a wrong token it keeps `targets`.
#[test]
fn a_client_follows_the_live_spines_the_controller_reports() {
    let stop = Arc::new(AtomicBool::new(false));
    let (a, at_a) = counting_echo(stop.clone());
    let (b, at_b) = counting_echo(stop.clone());
    let body = Arc::new(Mutex::new(topology(a, b)));
    let (admin, polls) = fake_admin("s3cret-token", body.clone(), stop.clone());
    let follow = |token: &str| {
        let mut c = client(b, 2000.0, 1000);
        c.controller = Some(
            toml::from_str(&format!(
                "admin = \"{admin}\"\ntoken = \"{token}\"\npoll_ms = 20\n"
            ))
            .unwrap(),
        );
        c
    };
    // The configured target is B, but the controller says only A lives.
    let run = std::thread::spawn({
        let c = follow("s3cret-token");
        move || Client::bind(c).unwrap().run()
    });
    std::thread::sleep(Duration::from_millis(400));
    let (a_before, b_before) = (at_a.load(Ordering::Relaxed), at_b.load(Ordering::Relaxed));
    *body.lock().unwrap() = topology(b, a);
    // Polls every 20 ms; 200 ms leave room for a stalled poller thread.
    std::thread::sleep(Duration::from_millis(200));
    let a_after_switch = at_a.load(Ordering::Relaxed);
    let r = run.join().unwrap();
    assert!(r.accounted(), "{}", r.summary());
    assert_eq!(r.completed, r.submitted, "{}", r.summary());
    assert!(a_before > 300, "A served from the first task: {a_before}");
    assert_eq!(
        b_before, 0,
        "no task went to the spine the controller calls dead"
    );
    assert_eq!(
        at_a.load(Ordering::Relaxed),
        a_after_switch,
        "within a poll of A's death, nothing more goes to A"
    );
    assert_eq!(
        at_a.load(Ordering::Relaxed) + at_b.load(Ordering::Relaxed),
        r.submitted
    );
    assert!(at_b.load(Ordering::Relaxed) > 300);
    assert_eq!(r.topology_updates, 2, "{}", r.summary());
    // A wrong token gets 401s: the client keeps its targets (B, alive now).
    let polls_before = polls.load(Ordering::Relaxed);
    let (a0, b0) = (at_a.load(Ordering::Relaxed), at_b.load(Ordering::Relaxed));
    let r = Client::bind(follow("wrong-token-0")).unwrap().run();
    assert_eq!(r.completed, r.submitted, "{}", r.summary());
    assert_eq!(r.topology_updates, 0);
    assert!(polls.load(Ordering::Relaxed) > polls_before, "it asked");
    assert_eq!(at_a.load(Ordering::Relaxed), a0);
    assert_eq!(at_b.load(Ordering::Relaxed) - b0, r.submitted);
    stop.store(true, Ordering::Relaxed);
}
