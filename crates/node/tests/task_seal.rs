//! Sealed tasks leaf → worker (docs/threat-model.md, "Forged tasks"), over
//! real loopback sockets: a leaf with the cluster key seals every task it
//! forwards (Horus and RS-H's REQF alike), and a worker with it runs only
//! sealed, fresh ones from its leaf's address: an unsealed task, one under
//! another key and a replayed one are dropped and counted by reason, while
//! sealed tasks arriving out of order all run. Before, a task from the
//! leaf's address (forgeable) ran whatever it asked for, up to the cap.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{rs_datagram, sock};
use netsched_node::config::{Policy, PoolConfig, Role};
use netsched_node::notice_auth::{notice_key, NoticeSealer};
use netsched_node::secret::{ClusterKey, Secret};
use netsched_node::{SwitchConfig, SwitchDaemon, Worker, WorkerConfig};
use netsched_proto::seal::{self, NoticeKey};
use netsched_proto::{
    task_id, HorusBody, HorusHeader, HorusMessage, HorusTask, Message, ReplyStatus, MAX_DATAGRAM,
};

const KEY: &str = "77e1d2c3b4a5968778695a4b3c2d1e0f77e1d2c3b4a5968778695a4b3c2d1e0f";
const MS: u64 = 1_000_000;

fn key() -> NoticeKey {
    notice_key(&ClusterKey::from_hex(KEY).unwrap())
}

fn task(seq: u32, service_time_ns: u64) -> Vec<u8> {
    Message::Horus(HorusMessage {
        header: HorusHeader {
            pool_id: 1,
            ..Default::default()
        },
        body: HorusBody::TaskFirst(HorusTask {
            task_id: task_id::new(7, seq),
            is_last: true,
            service_time_ns,
            payload: b"",
            ..Default::default()
        }),
    })
    .to_vec()
    .unwrap()
}

fn sealed_with(key: &NoticeKey, msg: &[u8], seq: u64) -> Vec<u8> {
    let mut buf = vec![0u8; msg.len() + seal::SEAL_LEN];
    buf[..msg.len()].copy_from_slice(msg);
    let n = seal::seal_task(key, &mut buf, msg.len(), seq).unwrap();
    buf.truncate(n);
    buf
}

/// The datagram a leaf daemon with the key sends its worker for a client's
/// task `datagram`.
fn forwarded_by_a_keyed_leaf(policy: Policy, datagram: &[u8]) -> Vec<u8> {
    let w = sock();
    w.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let client = sock().local_addr().unwrap();
    let cfg = SwitchConfig {
        instances: vec![PoolConfig::new(
            1,
            Role::Leaf,
            policy,
            vec![w.local_addr().unwrap()],
        )],
        key: Some(Secret::new(KEY)),
        ..Default::default()
    };
    let mut d = SwitchDaemon::new(&cfg, sock()).unwrap();
    d.on_datagram(datagram, client, MS);
    let mut buf = [0u8; 2048];
    let (n, _) = w.recv_from(&mut buf).expect("the task reaches the worker");
    buf[..n].to_vec()
}

#[test]
fn a_keyed_leaf_seals_the_tasks_it_forwards() {
    for (policy, datagram) in [
        (Policy::Horus, task(1, 1_000)),
        (Policy::RsH, rs_datagram(0, 1, 0)),
    ] {
        let got = forwarded_by_a_keyed_leaf(policy, &datagram);
        let (plain, seq) = seal::open_task(Some(&key()), &got)
            .unwrap_or_else(|e| panic!("{policy:?}: {e}: {got:?}"));
        assert!(seq.is_some(), "{policy:?}: unsealed");
        assert_eq!(seq.unwrap() & 1, 0, "the daemon's stream is even");
        assert!(Message::decode(plain).is_ok());
        assert_eq!(plain.len(), datagram.len());
    }
}

/// A worker with the key whose leaf is `leaf`.
fn keyed_worker(leaf: SocketAddr) -> (Worker, SocketAddr, Arc<AtomicBool>) {
    let key = Some(Secret::new(KEY));
    common::leaf_worker(
        leaf,
        WorkerConfig {
            key,
            ..Default::default()
        },
    )
}

/// Replies reaching `s` within `wait` each: their task ids (in order).
fn replies(s: &UdpSocket, want: usize, wait: Duration) -> Vec<u64> {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut ids = Vec::new();
    let mut buf = [0u8; 2048];
    while ids.len() < want {
        let Ok((n, _)) = s.recv_from(&mut buf) else {
            break;
        };
        if let Ok(Message::Horus(HorusMessage {
            body: HorusBody::Reply(r),
            ..
        })) = Message::decode(&buf[..n])
        {
            assert_eq!(r.status, ReplyStatus::Ok);
            ids.push(r.task_id & 0xffff_ffff);
        }
    }
    ids
}

#[test]
fn a_keyed_worker_runs_only_sealed_fresh_tasks_and_counts_the_rest() {
    let leaf = sock();
    let (w, addr, stop) = keyed_worker(leaf.local_addr().unwrap());
    let reg = w.registry();
    let drops = |reason: &str| {
        reg.value(
            "netsched_worker_seal_drops_total",
            &format!("{{executor=\"0\",reason=\"{reason}\"}}"),
        )
        .unwrap_or(0)
    };
    let genuine = NoticeSealer::new(key());
    let seal_next = |msg: &[u8]| {
        let mut buf = [0u8; MAX_DATAGRAM + seal::SEAL_LEN];
        buf[..msg.len()].copy_from_slice(msg);
        let n = genuine.seal_task(&mut buf, msg.len()).unwrap();
        buf[..n].to_vec()
    };
    // The attack: 4.9 s tasks from the leaf's own address, unsealed and
    // under another key; none may run.
    let other = notice_key(&ClusterKey::from_hex(&"11".repeat(32)).unwrap());
    leaf.send_to(&task(1, 4_900_000_000), addr).unwrap();
    leaf.send_to(&sealed_with(&other, &task(2, 4_900_000_000), 1 << 40), addr)
        .unwrap();
    // Genuine ones out of order (the window takes them), then one again.
    let (a, b) = (seal_next(&task(3, 1_000)), seal_next(&task(4, 1_000)));
    leaf.send_to(&b, addr).unwrap();
    leaf.send_to(&a, addr).unwrap();
    let ids = replies(&leaf, 2, Duration::from_secs(2));
    assert_eq!(ids, vec![4, 3], "the genuine tasks ran, and at once");
    leaf.send_to(&a, addr).unwrap();
    // A sealed task with a changed service time: its tag fails.
    let mut altered = seal_next(&task(5, 1_000));
    altered[27] ^= 0x40; // service_time_ns
    leaf.send_to(&altered, addr).unwrap();
    let after = seal_next(&task(6, 1_000));
    leaf.send_to(&after, addr).unwrap();
    assert_eq!(replies(&leaf, 1, Duration::from_secs(2)), vec![6]);
    assert_eq!(
        (drops("unsealed"), drops("bad_seal"), drops("replayed")),
        (1, 2, 1)
    );
    stop.store(true, Ordering::Relaxed);
    w.join();
    // Counted after each reply is sent: read once the executor stopped.
    assert_eq!(reg.sum("netsched_worker_tasks_total"), 3);
}
