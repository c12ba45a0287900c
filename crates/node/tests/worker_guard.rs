//! A worker obeys only its leaf: a task from any other
//! address is dropped and counted, a synthetic service time above the cap is
//! answered as failed at once, and a stop request ends even a long task's
//! sleep within a second.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::sock;
use netsched_node::metrics::Registry;
use netsched_node::{Worker, WorkerConfig};
use netsched_proto::{task_id, HorusBody, HorusMessage, HorusTask, Message, ReplyStatus};

fn task(seq: u32, service_time_ns: u64) -> Vec<u8> {
    Message::Horus(HorusMessage::task_first(
        1,
        HorusTask {
            task_id: task_id::new(7, seq),
            is_last: true,
            service_time_ns,
            ..Default::default()
        },
    ))
    .to_vec()
    .unwrap()
}

/// A worker whose leaf is `leaf` (`common::leaf_worker`).
fn worker(leaf: SocketAddr, max_service_ms: u64) -> (Worker, SocketAddr, Arc<AtomicBool>) {
    common::leaf_worker(
        leaf,
        WorkerConfig {
            max_service_ms,
            ..Default::default()
        },
    )
}

/// Next reply at `s` within `wait`: (task id, status, payload).
fn reply(s: &UdpSocket, wait: Duration) -> Option<(u64, ReplyStatus, Vec<u8>)> {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut buf = [0u8; 2048];
    let (n, _) = s.recv_from(&mut buf).ok()?;
    match Message::decode(&buf[..n]).unwrap() {
        Message::Horus(HorusMessage {
            body: HorusBody::Reply(r),
            ..
        }) => Some((r.task_id, r.status, r.payload.to_vec())),
        m => panic!("not a reply: {m:?}"),
    }
}

fn stranger_drops(reg: &Registry) -> u64 {
    reg.sum("netsched_worker_stranger_total")
}

#[test]
fn forged_task_from_a_stranger_is_dropped_and_counted() {
    let leaf = sock();
    let stranger = sock();
    let (w, addr, stop) = worker(leaf.local_addr().unwrap(), 5_000);
    let reg = w.registry();
    // The attack: a task that would hold the executor forever, sent
    // from an arbitrary port.
    stranger.send_to(&task(1, u64::MAX), addr).unwrap();
    stranger.send_to(&task(2, 1_000), addr).unwrap();
    // The leaf's own task is served, and is the only one answered.
    leaf.send_to(&task(3, 1_000), addr).unwrap();
    let got = reply(&leaf, Duration::from_secs(2)).expect("the leaf's task is answered");
    assert_eq!(got.0, task_id::new(7, 3));
    assert_eq!(got.1, ReplyStatus::Ok);
    assert_eq!(reply(&leaf, Duration::from_millis(200)), None);
    assert_eq!(reply(&stranger, Duration::from_millis(10)), None);
    assert_eq!(stranger_drops(&reg), 2);
    assert_eq!(reg.sum("netsched_worker_tasks_total"), 1);
    stop.store(true, Ordering::Relaxed);
    w.join();
}

#[test]
fn service_time_above_the_cap_fails_at_once() {
    let leaf = sock();
    let (w, addr, stop) = worker(leaf.local_addr().unwrap(), 100);
    let t = Instant::now();
    leaf.send_to(&task(1, u64::MAX), addr).unwrap();
    let got = reply(&leaf, Duration::from_secs(2)).expect("answered");
    assert_eq!(got.0, task_id::new(7, 1));
    assert_eq!(got.1, ReplyStatus::Failed);
    assert_eq!(got.2, b"service_time_over_cap");
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    // At the cap is still served.
    leaf.send_to(&task(2, 100_000_000), addr).unwrap();
    let got = reply(&leaf, Duration::from_secs(2)).expect("answered");
    assert_eq!((got.0, got.1), (task_id::new(7, 2), ReplyStatus::Ok));
    stop.store(true, Ordering::Relaxed);
    w.join();
}

#[test]
fn stop_ends_a_long_task_within_a_second() {
    let leaf = sock();
    let (w, addr, stop) = worker(leaf.local_addr().unwrap(), 60_000);
    leaf.send_to(&task(1, 30_000_000_000), addr).unwrap();
    // Long enough for the executor to be asleep inside the task.
    std::thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    stop.store(true, Ordering::Relaxed);
    w.join();
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "join took {:?}",
        t.elapsed()
    );
}

/// Client retries: a copy of a task still queued or
/// running is dropped, not run twice; a copy of an answered task runs again
/// (its reply may be the one that was lost: at-least-once).
#[test]
fn a_resubmitted_copy_of_a_pending_task_is_not_run_twice() {
    let leaf = sock();
    let (w, addr, stop) = worker(leaf.local_addr().unwrap(), 5_000);
    let reg = w.registry();
    leaf.send_to(&task(1, 100_000_000), addr).unwrap();
    leaf.send_to(&task(2, 1_000), addr).unwrap();
    leaf.send_to(&task(1, 100_000_000), addr).unwrap();
    leaf.send_to(&task(2, 1_000), addr).unwrap();
    let mut got = vec![];
    while let Some(r) = reply(&leaf, Duration::from_millis(500)) {
        got.push(r.0);
    }
    got.sort();
    assert_eq!(got, vec![task_id::new(7, 1), task_id::new(7, 2)]);
    assert_eq!(reg.sum("netsched_worker_duplicates_total"), 2);
    leaf.send_to(&task(1, 1_000), addr).unwrap();
    let again = reply(&leaf, Duration::from_secs(1)).expect("answered again");
    assert_eq!(again.0, task_id::new(7, 1));
    // The counter follows the reply.
    let t = Instant::now();
    while reg.sum("netsched_worker_tasks_total") < 3 && t.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(reg.sum("netsched_worker_tasks_total"), 3);
    stop.store(true, Ordering::Relaxed);
    w.join();
}
