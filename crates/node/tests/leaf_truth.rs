//! Truth after faults, at a Horus leaf driven datagram by
//! datagram: a duplicated reply cannot change a busy worker's load or idle
//! state, and a worker's heartbeat reconciles the counters that lost tasks
//! leave behind.

mod common;

use std::net::SocketAddr;

use common::sock;
use netsched_node::config::{Policy, PoolConfig, Role};
use netsched_node::metrics::Registry;
use netsched_node::{SwitchConfig, SwitchDaemon};
use netsched_proto::{
    task_id, HorusBody, HorusHeader, HorusMessage, HorusReply, HorusTask, Message, ReplyStatus,
};

const POOL: u16 = 2;
/// 1.0 in the rack average's 16.16 fixed point (one task per worker).
const ONE: u64 = 1 << 16;
/// Past the leaf's `loss_resync_ns` (10 ms) after the last dispatch.
const MS: u64 = 1_000_000;

fn msg(src: u16, qlen: u16, body: HorusBody<'_>) -> Vec<u8> {
    Message::Horus(HorusMessage {
        header: HorusHeader {
            pool_id: POOL,
            src_id: src,
            qlen,
            ..Default::default()
        },
        body,
    })
    .to_vec()
    .unwrap()
}

fn task(seq: u32) -> Vec<u8> {
    msg(
        0,
        0,
        HorusBody::TaskFirst(HorusTask {
            task_id: task_id::new(5, seq),
            is_last: true,
            service_time_ns: 1000,
            ..Default::default()
        }),
    )
}

fn reply(seq: u32, qlen: u16) -> Vec<u8> {
    msg(
        0,
        qlen,
        HorusBody::Reply(HorusReply {
            task_id: task_id::new(5, seq),
            status: ReplyStatus::Ok,
            payload: b"",
        }),
    )
}

/// A standalone Horus leaf over one worker at `worker`.
fn leaf(worker: SocketAddr) -> (SwitchDaemon, std::sync::Arc<Registry>) {
    let cfg = SwitchConfig {
        instances: vec![PoolConfig::new(
            POOL,
            Role::Leaf,
            Policy::Horus,
            vec![worker],
        )],
        ..Default::default()
    };
    let d = SwitchDaemon::new(&cfg, sock()).unwrap();
    let reg = d.registry();
    (d, reg)
}

/// (idle list length, rack average in 16.16).
fn state(d: &mut SwitchDaemon, reg: &Registry) -> (u64, u64) {
    d.publish_gauges();
    (
        reg.sum("netsched_idle_nodes"),
        // The gauge is in tasks; the leaf keeps 16.16 (Horus A.2).
        (reg.sum_f64("netsched_rack_load") * 65536.0).round() as u64,
    )
}

#[test]
fn a_duplicated_reply_does_not_free_a_busy_worker() {
    let w = sock();
    let wa = w.local_addr().unwrap();
    let client = sock().local_addr().unwrap();
    let (mut d, reg) = leaf(wa);
    assert_eq!(state(&mut d, &reg), (1, 0));
    // Task 1 runs and is answered: the worker is idle again.
    d.on_datagram(&task(1), client, MS);
    assert_eq!(state(&mut d, &reg), (0, ONE));
    d.on_datagram(&reply(1, 0), wa, 2 * MS);
    assert_eq!(state(&mut d, &reg), (1, 0));
    // Task 2 takes the worker; then a copy of task 1's reply arrives.
    d.on_datagram(&task(2), client, 3 * MS);
    assert_eq!(state(&mut d, &reg), (0, ONE));
    d.on_datagram(&reply(1, 0), wa, 4 * MS);
    assert_eq!(
        state(&mut d, &reg),
        (0, ONE),
        "a duplicated reply listed a busy worker idle or lowered the load"
    );
    assert_eq!(reg.sum("netsched_stale_replies_total"), 1);
    // Task 2's own reply frees it, once.
    d.on_datagram(&reply(2, 0), wa, 5 * MS);
    assert_eq!(state(&mut d, &reg), (1, 0));
    d.on_datagram(&reply(2, 0), wa, 6 * MS);
    assert_eq!(state(&mut d, &reg), (1, 0));
    assert_eq!(reg.sum("netsched_stale_replies_total"), 2);
}

#[test]
fn a_heartbeat_reconciles_tasks_lost_at_the_worker() {
    let w = sock();
    let wa = w.local_addr().unwrap();
    let client = sock().local_addr().unwrap();
    let (mut d, reg) = leaf(wa);
    // Three tasks go to the worker and are lost (it was restarted, or the
    // datagrams were): nothing answers them.
    for seq in 1..=3 {
        d.on_datagram(&task(seq), client, seq as u64 * MS);
    }
    assert_eq!(state(&mut d, &reg), (0, 3 * ONE));
    // A heartbeat right after a dispatch is not trusted yet (a task may be
    // on its way to the worker).
    d.on_datagram(&msg(0, 0, HorusBody::KeepAlive), wa, 4 * MS);
    assert_eq!(state(&mut d, &reg), (0, 3 * ONE));
    // Later, the worker's empty queue is the truth: the rack is idle again.
    d.on_datagram(&msg(0, 0, HorusBody::KeepAlive), wa, 50 * MS);
    assert_eq!(state(&mut d, &reg), (1, 0));
    // Idempotent: the same report again changes nothing.
    d.on_datagram(&msg(0, 0, HorusBody::KeepAlive), wa, 60 * MS);
    assert_eq!(state(&mut d, &reg), (1, 0));
    // A worker reporting tasks the leaf does not know of (the leaf was
    // restarted) counts them.
    d.on_datagram(&msg(0, 2, HorusBody::KeepAlive), wa, 70 * MS);
    assert_eq!(state(&mut d, &reg).1, 2 * ONE);
}

/// A RackSched REQF or REP (common::rs_datagram).
fn rs(kind: u8, local: u32, load: u32) -> Vec<u8> {
    common::rs_datagram(kind, local, load)
}

/// The rack load in the next LOAD_REPORT the leaf sends to `spine`, if any.
fn load_report(spine: &std::net::UdpSocket) -> Option<u32> {
    use netsched_proto::RackSchedMessage;
    let mut buf = [0u8; 256];
    let mut last = None;
    while let Ok((n, _)) = spine.recv_from(&mut buf) {
        if let Ok(Message::RackSched(RackSchedMessage::LoadReport(l))) = Message::decode(&buf[..n])
        {
            last = Some(l.load);
        }
    }
    last
}

#[test]
fn a_duplicated_racksched_rep_does_not_change_the_load_table() {
    // RackSched's own wire (OSDI'20 Alg. 1 lines 6-8), at an RS-H leaf that reports its load upstream: a REP frees its
    // ReqTable entry and sets the server's LOAD. A copy of an old REP carries
    // an old LOAD; it must not overwrite the current one.
    let w = sock();
    let wa = w.local_addr().unwrap();
    let spine = sock();
    spine.set_nonblocking(true).unwrap();
    let client = sock().local_addr().unwrap();
    let mut pc = PoolConfig::new(POOL, Role::Leaf, Policy::RsH, vec![wa]);
    pc.upstream = vec![spine.local_addr().unwrap()];
    let cfg = SwitchConfig {
        instances: vec![pc],
        ..Default::default()
    };
    let mut d = SwitchDaemon::new(&cfg, sock()).unwrap();
    let reg = d.registry();
    d.on_datagram(&rs(0, 1, 0), client, MS);
    d.on_datagram(&rs(1, 1, 0), wa, 2 * MS);
    d.on_datagram(&rs(0, 2, 0), client, 3 * MS);
    d.on_datagram(&rs(1, 2, 7), wa, 4 * MS);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let current = load_report(&spine).expect("a load report after REP 2");
    assert_eq!(current, 7 << 16, "rack load is the server's LOAD in 16.16");
    // A copy of REP 1 (LOAD 0) arrives late.
    d.on_datagram(&rs(1, 1, 0), wa, 5 * MS);
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(
        load_report(&spine).unwrap_or(current),
        current,
        "a stale REP changed the server's load"
    );
    assert_eq!(reg.sum("netsched_stale_replies_total"), 1);
}

#[test]
fn a_standalone_leafs_unsent_notices_are_not_drops() {
    // Horus §3.4: a leaf tells its spine when a worker leaves or rejoins its
    // idle list. A standalone leaf (no `upstream`, as `bench capacity` runs
    // it) has no one to tell; that loses no datagram and no task, so it must
    // not show up as a drop (it did: more drops than decisions).
    let w = sock();
    let wa = w.local_addr().unwrap();
    let client = sock().local_addr().unwrap();
    let (mut d, reg) = leaf(wa);
    for seq in 1..=10u32 {
        d.on_datagram(&task(seq), client, u64::from(2 * seq) * MS);
        d.on_datagram(&reply(seq, 0), wa, u64::from(2 * seq + 1) * MS);
    }
    assert_eq!(reg.sum("netsched_decisions_total"), 10);
    assert_eq!(reg.sum("netsched_drops_total"), 0, "{}", reg.render());
    // Each task empties the one-worker idle list and moves the rack load,
    // its reply refills the list and moves the load back.
    let unsent = |t: &str| {
        reg.value(
            "netsched_notices_unsent_total",
            &format!("{{type=\"{t}\"}}"),
        )
        .unwrap()
    };
    assert_eq!(unsent("idle_remove"), 10, "{}", reg.render());
    assert_eq!(unsent("idle_add"), 10);
    assert_eq!(unsent("load_update"), 10);
}
