//! "No allocation per packet" (`netsched switch`): once warm, a
//! scheduler daemon handles tasks and replies without touching the heap.
//! A counting global allocator (this test binary only) counts the
//! allocations the test thread makes while it drives a Horus leaf and a
//! Horus spine through `on_datagram`, which decodes, runs the data plane
//! and sends with `sendmmsg`, as the daemon's loop does. The leaf decides
//! from its idle list, by power-of-2 sampling, and with resubmission passes
//! (Horus §3.3), all inside the counted window. The same holds for a
//! RackSched leaf on its own wire (REQF/REP, OSDI'20 §3.2) and for the
//! `jsq` (zero-delay feed) and `central` baselines.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::{SocketAddr, UdpSocket};

use common::{sock, switch_config};
use netsched_node::config::{Policy, PoolConfig, Role};
use netsched_node::SwitchDaemon;
use netsched_proto::{
    task_id, HorusBody, HorusHeader, HorusMessage, HorusReply, Message, RackSchedMessage,
    RackSchedPacket, ReplyStatus, ReqId,
};

struct Counting;

thread_local! {
    // Const-initialised: reading them never allocates. Per thread, so tests
    // running in parallel do not count each other's allocations.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn count_one() {
    if COUNTING.with(|c| c.get()) {
        ALLOCS.with(|a| a.set(a.get() + 1));
    }
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count_one();
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count_one();
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn encode(msg: Message<'_>, buf: &mut [u8]) -> usize {
    msg.encode(buf).expect("fits")
}

fn task(pool: u16, id: u64, buf: &mut [u8]) -> usize {
    encode(common::task_message(pool, id, 1_000), buf)
}

fn reply(pool: u16, src: u16, qlen: u16, id: u64, buf: &mut [u8]) -> usize {
    encode(
        Message::Horus(HorusMessage {
            header: HorusHeader {
                pool_id: pool,
                src_id: src,
                qlen,
                ..Default::default()
            },
            body: HorusBody::Reply(HorusReply {
                task_id: id,
                status: ReplyStatus::Ok,
                payload: b"",
            }),
        }),
        buf,
    )
}

fn rs_packet(id: u64, load: u32) -> RackSchedPacket<'static> {
    RackSchedPacket {
        req_id: ReqId {
            client_id: task_id::app_id(id),
            local_id: task_id::seq(id),
        },
        load,
        is_last: true,
        class: 0,
        service_time_ns: if load == 0 { 1_000 } else { 0 },
        payload: b"",
    }
}

/// Task and reply builders of one wire family.
#[derive(Clone, Copy)]
enum Wire {
    Horus,
    RackSched,
}

impl Wire {
    fn task(self, pool: u16, id: u64, buf: &mut [u8]) -> usize {
        match self {
            Wire::Horus => task(pool, id, buf),
            Wire::RackSched => encode(
                Message::RackSched(RackSchedMessage::ReqFirst(rs_packet(id, 0))),
                buf,
            ),
        }
    }

    fn reply(self, pool: u16, src: u16, qlen: u16, id: u64, buf: &mut [u8]) -> usize {
        match self {
            Wire::Horus => reply(pool, src, qlen, id, buf),
            Wire::RackSched => encode(
                Message::RackSched(RackSchedMessage::Reply(rs_packet(id, qlen as u32))),
                buf,
            ),
        }
    }
}

/// Which of `socks` got the datagram the daemon just sent (a worker or a
/// leaf); drains it with a stack buffer.
fn who_got_it(socks: &[UdpSocket]) -> usize {
    let mut b = [0u8; 2048];
    for _ in 0..10_000 {
        for (i, s) in socks.iter().enumerate() {
            if s.recv_from(&mut b).is_ok() {
                return i;
            }
        }
    }
    panic!("no downstream node got the task");
}

/// Drives `n` tasks (a multiple of 4) through the daemon: four tasks from
/// the client, then the chosen nodes' replies (queue length 0 for every
/// third, 2 otherwise), so idle lists fill and drain, power-of-2 runs, and
/// drift builds up between replies until the check of Alg. 2 sends tasks
/// through a second pass (resubmission). Returns the allocations counted.
fn drive(
    d: &mut SwitchDaemon,
    pool: u16,
    client: SocketAddr,
    down: &[UdpSocket],
    from: u32,
    n: u32,
) -> u64 {
    drive_wire(d, Wire::Horus, 2, pool, client, down, from, n)
}

/// Allocations made while `f` runs, on this thread.
fn allocations_in(f: impl FnOnce()) -> u64 {
    ALLOCS.with(|a| a.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCS.with(|a| a.get())
}

/// Tasks `g..g + 4` from `client` into `d`, each at `k` µs; returns each
/// task's id and the index of the downstream socket it went to.
fn send_batch(
    d: &mut SwitchDaemon,
    wire: Wire,
    pool: u16,
    client: SocketAddr,
    down: &[UdpSocket],
    g: u32,
) -> [(u64, usize); 4] {
    let mut buf = [0u8; 256];
    std::array::from_fn(|j| {
        let k = g + j as u32;
        let id = task_id::new(7, k);
        let len = wire.task(pool, id, &mut buf);
        d.on_datagram(&buf[..len], client, k as u64 * 1_000);
        (id, who_got_it(down))
    })
}

/// [`drive`], but each batch's replies come after the next batch's tasks,
/// so every worker always owes the leaf a reply: a Horus leaf, which counts
/// outstanding tasks, then finds no idle worker and takes the busy path.
fn drive_lagged(
    d: &mut SwitchDaemon,
    pool: u16,
    client: SocketAddr,
    down: &[UdpSocket],
    from: u32,
    n: u32,
) -> u64 {
    let mut buf = [0u8; 256];
    let addrs: [SocketAddr; 4] = std::array::from_fn(|i| down[i].local_addr().unwrap());
    let mut owed: Option<[(u64, usize); 4]> = None;
    allocations_in(|| {
        for g in (from..from + n).step_by(4) {
            let sent = send_batch(d, Wire::Horus, pool, client, down, g);
            if let Some(prev) = owed.replace(sent) {
                for (j, &(id, w)) in prev.iter().enumerate() {
                    let k = g + j as u32;
                    let len = Wire::Horus.reply(pool, w as u16, 1, id, &mut buf);
                    d.on_datagram(&buf[..len], addrs[w], k as u64 * 1_000 + 500);
                }
            }
        }
    })
}

/// `drive` in `wire`, replies of the non-idle two thirds reporting
/// `busy_qlen` (0: every reply frees its worker, as the central queue's
/// single-task workers need).
#[allow(clippy::too_many_arguments)]
fn drive_wire(
    d: &mut SwitchDaemon,
    wire: Wire,
    busy_qlen: u16,
    pool: u16,
    client: SocketAddr,
    down: &[UdpSocket],
    from: u32,
    n: u32,
) -> u64 {
    let mut buf = [0u8; 256];
    let addrs: [SocketAddr; 4] = std::array::from_fn(|i| down[i].local_addr().unwrap());
    allocations_in(|| {
        for g in (from..from + n).step_by(4) {
            let sent = send_batch(d, wire, pool, client, down, g);
            for (j, &(id, w)) in sent.iter().enumerate() {
                let k = g + j as u32;
                let qlen = if k.is_multiple_of(3) { 0 } else { busy_qlen };
                let len = wire.reply(pool, w as u16, qlen, id, &mut buf);
                d.on_datagram(&buf[..len], addrs[w], k as u64 * 1_000 + 500);
            }
        }
    })
}

fn daemon(role: Role, down: &[UdpSocket], up: Option<SocketAddr>) -> SwitchDaemon {
    daemon_with(role, Policy::Horus, down, up)
}

fn daemon_with(
    role: Role,
    policy: Policy,
    down: &[UdpSocket],
    up: Option<SocketAddr>,
) -> SwitchDaemon {
    let downstream = down.iter().map(|s| s.local_addr().unwrap()).collect();
    let cfg = switch_config(vec![PoolConfig {
        rack_workers: if role == Role::Spine {
            vec![2; down.len()]
        } else {
            vec![]
        },
        upstream: up.into_iter().collect(),
        ..PoolConfig::new(4, role, policy, downstream)
    }]);
    SwitchDaemon::new(&cfg, sock()).unwrap()
}

fn nonblocking(n: usize) -> Vec<UdpSocket> {
    (0..n)
        .map(|_| {
            let s = sock();
            s.set_nonblocking(true).unwrap();
            s
        })
        .collect()
}

#[test]
fn a_warm_leaf_and_spine_allocate_nothing_per_task() {
    let client = sock();
    let c = client.local_addr().unwrap();
    for role in [Role::Leaf, Role::Spine] {
        let down = nonblocking(4);
        let spine = sock();
        let up = (role == Role::Leaf).then(|| spine.local_addr().unwrap());
        let mut d = daemon(role, &down, up);
        // Warm-up: the reply route of this client, buffer and queue growth.
        let warm = drive(&mut d, 4, c, &down, 0, 2_000);
        let reg = d.registry();
        let count = |name: &str, labels: &str| reg.value(name, labels).unwrap_or(0);
        let sampled0 = count("netsched_decisions_total", "{decision=\"sampled\"}");
        let idle0 = count("netsched_decisions_total", "{decision=\"idle\"}");
        let resub0 = reg.sum("netsched_resubmissions_total");
        let mut steady = drive(&mut d, 4, c, &down, 2_000, 5_000);
        let mut tasks = 5_000;
        if role == Role::Leaf {
            // Every reply above answers its task, so the leaf's workers
            // are idle again before the next batch; here they stay busy.
            steady += drive_lagged(&mut d, 4, c, &down, 7_000, 5_000);
            tasks += 5_000;
        }
        eprintln!("{role:?}: {warm} allocations warming up, {steady} for the next {tasks} tasks");
        // 10,000 datagrams in, 10,000+ out: any per-packet allocation would
        // count thousands.
        assert_eq!(steady, 0, "{role:?}: allocations on the hot path");
        let sampled = count("netsched_decisions_total", "{decision=\"sampled\"}") - sampled0;
        let idle = count("netsched_decisions_total", "{decision=\"idle\"}") - idle0;
        let resub = reg.sum("netsched_resubmissions_total") - resub0;
        eprintln!("{role:?}: in the counted window: idle {idle}, sampled {sampled}, resubmissions {resub}");
        assert_eq!(idle + sampled, tasks, "{role:?}: every task was scheduled");
        if role == Role::Leaf {
            // Both decision paths of Alg. 1 and resubmission passes (drift
            // check, Alg. 2) ran inside the counted window.
            assert!(sampled > 1_000 && idle > 500 && resub > 500);
        }
    }
}

#[test]
fn racksched_wire_and_baseline_leaves_allocate_nothing_per_task() {
    let client = sock();
    let c = client.local_addr().unwrap();
    for (policy, wire, busy_qlen) in [
        (Policy::Racksched, Wire::RackSched, 2),
        (Policy::Jsq, Wire::Horus, 2),
        (Policy::Central, Wire::Horus, 0),
    ] {
        let down = nonblocking(4);
        let mut d = daemon_with(Role::Leaf, policy, &down, None);
        let warm = drive_wire(&mut d, wire, busy_qlen, 4, c, &down, 0, 2_000);
        let reg = d.registry();
        let decided0 = reg.sum("netsched_decisions_total");
        let steady = drive_wire(&mut d, wire, busy_qlen, 4, c, &down, 2_000, 5_000);
        eprintln!("{policy:?}: {warm} allocations warming up, {steady} for the next 5,000 tasks");
        assert_eq!(steady, 0, "{policy:?}: allocations on the hot path");
        assert_eq!(
            reg.sum("netsched_decisions_total") - decided0,
            5_000,
            "{policy:?}: every task was scheduled"
        );
        assert_eq!(reg.sum("netsched_drops_total"), 0, "{policy:?}");
    }
}
