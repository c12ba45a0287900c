//! RS-H's LOAD_REPORT (leaf → spine, Horus §4.1) is sealed as Horus notices
//! are: a leaf with the cluster key seals its reports, and a spine with it
//! drops an unsealed, wrongly sealed or replayed one, counted, over real
//! loopback sockets. Before, a report was checked by source address only:
//! one forged datagram at the highest load sent every task to the other
//! rack until that leaf's next reply.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{rs_datagram as rs, runtime_drop, sock};
use netsched_node::config::{Policy, PoolConfig, Role};
use netsched_node::notice_auth::{notice_key, NoticeSealer};
use netsched_node::secret::{ClusterKey, Secret};
use netsched_node::{SwitchConfig, SwitchDaemon};
use netsched_proto::seal;
use netsched_proto::{Message, RackSchedLoadReport, RackSchedMessage, MAX_DATAGRAM};

const KEY: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
const POOL: u16 = 1;
const MS: u64 = 1_000_000;

fn report(rack: u16, load: u32) -> Vec<u8> {
    Message::RackSched(RackSchedMessage::LoadReport(RackSchedLoadReport {
        src_id: rack,
        pool_id: POOL,
        load,
    }))
    .to_vec()
    .unwrap()
}

fn sealed(s: &NoticeSealer, msg: &[u8]) -> Vec<u8> {
    let mut buf = [0u8; MAX_DATAGRAM];
    buf[..msg.len()].copy_from_slice(msg);
    let n = s.seal(&mut buf, msg.len()).unwrap();
    buf[..n].to_vec()
}

fn cluster_key() -> ClusterKey {
    ClusterKey::from_hex(KEY).unwrap()
}

/// A keyed RS-H leaf seals the LOAD_REPORT it sends after a reply.
#[test]
fn a_keyed_racksched_leaf_seals_its_load_reports() {
    let w = sock();
    let wa = w.local_addr().unwrap();
    let spine = sock();
    spine
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let client = sock().local_addr().unwrap();
    let mut pc = PoolConfig::new(POOL, Role::Leaf, Policy::RsH, vec![wa]);
    pc.upstream = vec![spine.local_addr().unwrap()];
    let cfg = SwitchConfig {
        instances: vec![pc],
        key: Some(Secret::new(KEY)),
        ..Default::default()
    };
    let mut d = SwitchDaemon::new(&cfg, sock()).unwrap();
    d.on_datagram(&rs(0, 1, 0), client, MS);
    d.on_datagram(&rs(1, 1, 3), wa, 2 * MS);
    let mut buf = [0u8; 256];
    let (n, _) = spine.recv_from(&mut buf).unwrap();
    let (msg, seq) = seal::open(Some(&notice_key(&cluster_key())), &buf[..n]).unwrap();
    assert!(seq.is_some(), "unsealed report: {:?}", &buf[..n]);
    assert!(matches!(
        Message::decode(msg),
        Ok(Message::RackSched(RackSchedMessage::LoadReport(l))) if l.load == 3 << 16
    ));
}

/// An RS-H spine with the key, run on its own thread on loopback, two racks
/// whose "leaves" are test sockets. From rack 1's leaf's own address: an
/// unsealed report at the highest load, one under another key and a
/// genuine one sent again are dropped and counted; the genuine one is
/// taken; and tasks still go to both racks.
#[test]
fn forged_unsealed_and_replayed_load_reports_are_dropped() {
    let leaves = [sock(), sock()];
    for l in &leaves {
        l.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
    }
    let addrs: Vec<SocketAddr> = leaves.iter().map(|l| l.local_addr().unwrap()).collect();
    let cfg = SwitchConfig {
        instances: vec![PoolConfig {
            rack_workers: vec![1, 1],
            ..PoolConfig::new(POOL, Role::Spine, Policy::RsH, addrs)
        }],
        key: Some(Secret::new(KEY)),
        ..Default::default()
    };
    let spine_sock = sock();
    let spine = spine_sock.local_addr().unwrap();
    let mut d = SwitchDaemon::new(&cfg, spine_sock).unwrap();
    let reg = d.registry();
    let stop = Arc::new(AtomicBool::new(false));
    let run = {
        let stop = stop.clone();
        std::thread::spawn(move || d.run(&stop).unwrap())
    };
    let genuine = NoticeSealer::new(notice_key(&cluster_key()));
    let other = NoticeSealer::new(notice_key(&ClusterKey::from_hex(&"11".repeat(32)).unwrap()));
    let leaf1 = &leaves[1];
    let ok = sealed(&genuine, &report(1, 0));
    leaf1.send_to(&ok, spine).unwrap();
    leaf1.send_to(&report(1, u32::MAX), spine).unwrap();
    leaf1
        .send_to(&sealed(&other, &report(1, u32::MAX)), spine)
        .unwrap();
    leaf1.send_to(&ok, spine).unwrap();
    // Rack 0 reports a middling load: a rack 1 believed at the highest
    // load would get no task at all (power-of-k over two racks).
    leaves[0]
        .send_to(&sealed(&genuine, &report(0, 2 << 16)), spine)
        .unwrap();
    let wait_for = |what: &str, f: &dyn Fn() -> bool| {
        for _ in 0..200 {
            if f() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("{what}: {}", reg.render());
    };
    wait_for("the forged reports counted", &|| {
        runtime_drop(&reg, "unsealed")
            + runtime_drop(&reg, "bad_seal")
            + runtime_drop(&reg, "replayed")
            == 3
    });
    let client = sock();
    for local in 1..=40 {
        client.send_to(&rs(0, local, 0), spine).unwrap();
    }
    let mut got = [0u64; 2];
    let mut buf = [0u8; 256];
    for (i, l) in leaves.iter().enumerate() {
        while let Ok((n, _)) = l.recv_from(&mut buf) {
            if matches!(
                Message::decode(&buf[..n]),
                Ok(Message::RackSched(RackSchedMessage::ReqFirst(_)))
            ) {
                got[i] += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    run.join().unwrap();
    let what = format!("tasks per rack {got:?}\n{}", reg.render());
    assert_eq!(runtime_drop(&reg, "unsealed"), 1, "{what}");
    assert_eq!(runtime_drop(&reg, "bad_seal"), 1, "{what}");
    assert_eq!(runtime_drop(&reg, "replayed"), 1, "{what}");
    assert_eq!(got[0] + got[1], 40, "{what}");
    // Rack 1 at load 0 against rack 0 at 2: the lighter one wins whenever
    // both are sampled.
    assert!(got[1] > got[0], "{what}");
}
