//! Forged and lost state messages on a loopback cluster: two forged notices
//! (rack 1 "has no idle worker" and "is at the highest load") sent once
//! used to send every task to rack 0 for as long as rack 1 got no task. With
//! soft state the leaf's next refresh undoes them (bound: a quarter of
//! `soft_state_ms`, 250 ms by default); with sealed notices they are
//! dropped on arrival. Replayed and wrongly sealed notices are counted and
//! dropped.

mod common;

use std::net::UdpSocket;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use netsched_config::workload::ServiceDist;
use netsched_node::cluster::{ClusterSpec, LocalCluster};
use netsched_node::config::Target;
use netsched_node::metrics::Registry;
use netsched_node::notice_auth::{notice_key, NoticeSealer};
use netsched_node::secret::ClusterKey;
use netsched_node::{Client, ClientConfig, ClientReport};
use netsched_proto::{HorusBody, HorusHeader, HorusMessage, Message, MAX_DATAGRAM};

const KEY: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
const POOL: u16 = 1;

/// One loopback cluster at a time in this binary (two cores).
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static M: Mutex<()> = Mutex::new(());
    M.lock().unwrap_or_else(|e| e.into_inner())
}

fn start(key: Option<&str>, soft_state_ms: u64) -> LocalCluster {
    LocalCluster::start(&ClusterSpec {
        pool: POOL,
        racks: 2,
        executors: 2,
        seed: 3,
        heartbeat_ms: 50,
        key: key.map(str::to_string),
        soft_state_ms,
        ..ClusterSpec::default()
    })
    .unwrap()
}

/// 1 ms tasks (slept, not spun) at 1,600/s over four workers: 40 % load,
/// so both racks are needed and one rack alone runs at 80 %.
fn run_client(c: &LocalCluster, seed: u64) -> ClientReport {
    let mut cl = Client::bind(ClientConfig {
        targets: vec![Target {
            addr: c.spine,
            weight: 1.0,
        }],
        pool: POOL,
        app_id: 9,
        rate: 1600.0,
        duration_ms: 1500,
        service: ServiceDist::Fixed { value_us: 1000.0 },
        timeout_ms: 2000,
        seed,
        bind: "127.0.0.1:0".into(),
        ..Default::default()
    })
    .unwrap();
    cl.run()
}

fn tasks_at(leaf: &Registry) -> u64 {
    leaf.value("netsched_rx_packets_total", "{type=\"task_first\"}")
        .unwrap()
}

/// (share of tasks at rack 1 in %, p99 in µs) of one client run.
fn measure(c: &LocalCluster, seed: u64) -> (f64, f64, ClientReport) {
    let before: Vec<u64> = c.leaf_metrics.iter().map(|l| tasks_at(l)).collect();
    let r = run_client(c, seed);
    let got: Vec<u64> = c
        .leaf_metrics
        .iter()
        .zip(&before)
        .map(|(l, b)| tasks_at(l) - b)
        .collect();
    let share = 100.0 * got[1] as f64 / (got[0] + got[1]).max(1) as f64;
    (share, r.percentile_us(0.99), r)
}

fn notice(body: HorusBody<'static>) -> Vec<u8> {
    Message::Horus(HorusMessage {
        header: HorusHeader {
            pool_id: POOL,
            src_id: 1,
            ..Default::default()
        },
        body,
    })
    .to_vec()
    .unwrap()
}

/// The attack of the runtime's threat model: rack 1 has no idle worker and
/// the highest load, sent once from rack 1's leaf's own address.
fn forge(leaf1: &UdpSocket, spine: std::net::SocketAddr) {
    leaf1
        .send_to(&notice(HorusBody::IdleRemove), spine)
        .unwrap();
    let max = HorusBody::LoadUpdate { load: u32::MAX };
    leaf1.send_to(&notice(max), spine).unwrap();
}

fn runtime_drop(r: &Registry, reason: &str) -> u64 {
    common::runtime_drop(r, reason)
}

/// Soft state without seals (the expiry and refresh path): the forged
/// notices are accepted, and undone by rack 1's next refresh. The split and
/// p99 measured from the stated bound on match the run without them.
#[test]
fn forged_notices_are_undone_by_the_next_refresh() {
    let _one = one_at_a_time();
    let c = start(None, 1000);
    std::thread::sleep(Duration::from_millis(300));
    let (share0, p99_0, r0) = measure(&c, 1);
    forge(&c.leaf_sockets[1], c.spine);
    // The bound: one refresh interval (250 ms) plus the time the refresh
    // takes to arrive; 1 s is the stated bound if refreshes are lost too.
    std::thread::sleep(Duration::from_millis(1000));
    let (share1, p99_1, r1) = measure(&c, 2);
    let spine = c.spine_metrics.clone();
    c.shutdown().unwrap();
    let rx = |t: &str| {
        spine
            .value("netsched_rx_packets_total", &format!("{{type=\"{t}\"}}"))
            .unwrap()
    };
    let what = format!(
        "rack 1 share {share0:.1} % -> {share1:.1} %, p99 {p99_0:.0} -> {p99_1:.0} us\n{}\n{}",
        r0.summary(),
        r1.summary()
    );
    assert!(rx("idle_remove") >= 1 && rx("load_update") >= 1, "{what}");
    assert!(share0 > 15.0, "both racks used without the attack: {what}");
    assert!((share1 - share0).abs() <= 15.0, "{what}");
    // 2x, with 2 ms of slack for a loaded two-core machine.
    assert!(p99_1 <= 2.0 * p99_0 + 2000.0, "{what}");
    assert!(r1.completed * 100 >= r1.submitted * 99, "{what}");
}

/// With seals (on whenever the cluster has a key) the forged notices never
/// reach the data plane: counted as `unsealed` and dropped, and the same
/// notices sealed under another key as `bad_seal`, and one under the right
/// key with a sequence number the leaf has passed as `replayed`.
#[test]
fn unsealed_wrongly_sealed_and_replayed_notices_are_dropped() {
    let _one = one_at_a_time();
    let c = start(Some(KEY), 1000);
    std::thread::sleep(Duration::from_millis(300));
    let (share0, _, _) = measure(&c, 1);
    forge(&c.leaf_sockets[1], c.spine);
    let other = NoticeSealer::new(notice_key(&ClusterKey::from_hex(&"11".repeat(32)).unwrap()));
    let sealed = |s: &NoticeSealer, body: HorusBody<'static>| {
        let mut buf = [0u8; MAX_DATAGRAM];
        let m = notice(body);
        buf[..m.len()].copy_from_slice(&m);
        let n = s.seal(&mut buf, m.len()).unwrap();
        buf[..n].to_vec()
    };
    let wrong = sealed(&other, HorusBody::IdleRemove);
    c.leaf_sockets[1].send_to(&wrong, c.spine).unwrap();
    // Under the real key but with a sequence number rack 1 has passed, as
    // a recorded notice of its would carry.
    let key = notice_key(&ClusterKey::from_hex(KEY).unwrap());
    let mut old = [0u8; MAX_DATAGRAM];
    let m = notice(HorusBody::IdleRemove);
    old[..m.len()].copy_from_slice(&m);
    let n = netsched_proto::seal::seal(&key, &mut old, m.len(), 1).unwrap();
    c.leaf_sockets[1].send_to(&old[..n], c.spine).unwrap();
    // Measured at once: nothing forged got in, so nothing needs undoing.
    let (share1, _, r1) = measure(&c, 2);
    let spine = c.spine_metrics.clone();
    let leaves = c.leaf_metrics.clone();
    c.shutdown().unwrap();
    let counters = |r: &Registry| {
        r.render()
            .lines()
            .filter(|l| {
                l.starts_with("netsched_drops_total")
                    || l.starts_with("netsched_rx_packets")
                    || l.starts_with("netsched_tx_packets")
            })
            .filter(|l| !l.ends_with(" 0"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let what = format!(
        "rack 1 share {share0:.1} % -> {share1:.1} %\n{}\nspine:\n{}\nleaf 1:\n{}",
        r1.summary(),
        counters(&spine),
        counters(&leaves[1])
    );
    assert_eq!(runtime_drop(&spine, "unsealed"), 2, "{what}");
    assert_eq!(runtime_drop(&spine, "bad_seal"), 1, "{what}");
    assert_eq!(runtime_drop(&spine, "replayed"), 1, "{what}");
    assert!((share1 - share0).abs() <= 15.0, "{what}");
    assert!(r1.completed * 100 >= r1.submitted * 99, "{what}");
    // The cluster's own notices and keep-alives all verified.
    for l in &leaves {
        for why in ["unsealed", "bad_seal", "replayed"] {
            assert_eq!(runtime_drop(l, why), 0, "leaf: {why}");
        }
    }
}

/// A leaf with the cluster key seals what it sends its spine; a spine with
/// it accepts that and refuses the same notice unsealed.
#[test]
fn a_keyed_leaf_seals_its_notices() {
    use netsched_node::config::{Policy, PoolConfig, Role};
    use netsched_node::{SwitchConfig, SwitchDaemon};
    let spine = common::sock();
    spine
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let worker = common::sock().local_addr().unwrap();
    let cfg = SwitchConfig {
        instances: vec![PoolConfig {
            upstream: vec![spine.local_addr().unwrap()],
            rack: 1,
            ..PoolConfig::new(POOL, Role::Leaf, Policy::Horus, vec![worker])
        }],
        key: Some(netsched_node::secret::Secret::new(KEY)),
        ..Default::default()
    };
    let mut leaf = SwitchDaemon::new(&cfg, common::sock()).unwrap();
    let client = common::sock().local_addr().unwrap();
    // A task takes the one idle worker: the leaf tells its spine.
    leaf.on_datagram(&common::task_datagram(POOL, 1 << 32 | 1), client, 1);
    let mut buf = [0u8; 2048];
    let (n, _) = spine.recv_from(&mut buf).unwrap();
    let (_, seal) = netsched_proto::seal::split(&buf[..n]);
    assert!(
        seal.is_some(),
        "unsealed notice of {n} bytes: {:?}",
        &buf[..n]
    );
    let key = notice_key(&ClusterKey::from_hex(KEY).unwrap());
    assert!(netsched_proto::seal::verify(&key, &buf[..n]).is_ok());
    // A spine with the key takes it from the leaf's address.
    let leaf_addr = leaf.local_addr();
    let scfg = SwitchConfig {
        instances: vec![PoolConfig {
            rack_workers: vec![1, 1],
            ..PoolConfig::new(POOL, Role::Spine, Policy::Horus, vec![client, leaf_addr])
        }],
        key: Some(netsched_node::secret::Secret::new(KEY)),
        ..Default::default()
    };
    let mut sp = SwitchDaemon::new(&scfg, common::sock()).unwrap();
    let reg = sp.registry();
    sp.on_datagram(&buf[..n], leaf_addr, 2);
    sp.on_datagram(&buf[..n], leaf_addr, 3);
    let m = &buf[..n - netsched_proto::seal::SEAL_LEN];
    sp.on_datagram(m, leaf_addr, 4);
    assert_eq!(runtime_drop(&reg, "unsealed"), 1, "{}", reg.render());
    assert_eq!(runtime_drop(&reg, "replayed"), 1);
    assert_eq!(runtime_drop(&reg, "bad_seal"), 0);
}
