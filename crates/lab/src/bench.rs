//! `netsched bench switch`: throughput and added latency of the scheduler
//! daemon on loopback.
//!
//! The daemon under test runs on its own thread with a real socket. Its
//! downstream is an *echo* thread that answers every task at once with an
//! idle reply (qlen 0), so the daemon, not the workers, is the bottleneck.
//! * Throughput: a closed-loop generator keeps `window` tasks outstanding
//!   and counts completions; the daemon thread's own CPU time gives tasks per
//!   CPU-second (per core), which is meaningful even when the generator and
//!   the echo share the machine's cores with it.
//! * Added latency: the open-loop [`Client`](netsched_node::Client) at a low rate, once
//!   straight to the echo and once through the daemon; the difference of the
//!   medians is what the daemon's extra hop costs.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use netsched_proto::{
    task_id, HorusBody, HorusHeader, HorusMessage, HorusReply, HorusTask, Message, ReplyStatus,
    MAX_DATAGRAM,
};

use crate::error::Error;
use netsched_node::config::ConfigError;
use netsched_node::config::{ClientConfig, Policy, PoolConfig, Role, SwitchConfig, Target};
use netsched_node::net;
use netsched_node::switch::SwitchDaemon;
use netsched_node::Client;

/// Which instance the benchmarked daemon hosts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchRole {
    /// A Horus leaf over `nodes` workers: per task it handles the task and
    /// the worker's reply (updating load and idle list) and forwards both.
    Leaf,
    /// A Horus spine over `nodes` racks: per task it handles the task and
    /// forwards the reply.
    Spine,
}

#[derive(Clone, Debug)]
pub struct BenchOpts {
    pub role: BenchRole,
    /// The data plane under test (any policy the daemon hosts).
    pub policy: Policy,
    pub nodes: u32,
    pub duration: Duration,
    pub window: usize,
    /// Open-loop rate for the latency part, tasks/s.
    pub low_rate: f64,
    pub latency_duration: Duration,
}

impl Default for BenchOpts {
    fn default() -> Self {
        BenchOpts {
            role: BenchRole::Leaf,
            policy: Policy::Horus,
            nodes: 16,
            duration: Duration::from_secs(3),
            window: 64,
            low_rate: 2_000.0,
            latency_duration: Duration::from_secs(2),
        }
    }
}

#[derive(Clone, Debug)]
pub struct BenchResult {
    pub tasks: u64,
    pub wall_s: f64,
    pub tasks_per_s: f64,
    /// Tasks per second of the daemon thread's CPU time.
    pub tasks_per_cpu_s: f64,
    pub daemon_cpu_share: f64,
    pub direct_p50_us: f64,
    pub direct_p99_us: f64,
    pub via_p50_us: f64,
    pub via_p99_us: f64,
}

impl BenchResult {
    pub fn summary(&self) -> String {
        format!(
            "throughput: {} tasks in {:.2} s = {:.0} tasks/s wall; daemon thread busy {:.0} % \
             -> {:.0} tasks per daemon CPU-second\n\
             latency at low load (open loop): direct to echo p50 {:.1} us p99 {:.1} us; \
             through the daemon p50 {:.1} us p99 {:.1} us; added p50 {:.1} us",
            self.tasks,
            self.wall_s,
            self.tasks_per_s,
            self.daemon_cpu_share * 100.0,
            self.tasks_per_cpu_s,
            self.direct_p50_us,
            self.direct_p99_us,
            self.via_p50_us,
            self.via_p99_us,
            self.via_p50_us - self.direct_p50_us
        )
    }
}

/// Answers every task packet with an idle reply to its sender, as downstream
/// node `dst_id` (the node the daemon picked). Batched (recvmmsg/sendmmsg) so
/// it does not limit the daemon.
pub(crate) fn echo(sock: UdpSocket, stop: Arc<AtomicBool>) {
    let mut rxb = net::Mmsg::new(64, 2048);
    let mut txb = net::Mmsg::new(64, MAX_DATAGRAM);
    while !stop.load(Ordering::Relaxed) {
        let n = rxb.recv(&sock).unwrap_or(0);
        for k in 0..n {
            let (data, src) = rxb.get(k);
            let (
                Some(src),
                Ok(Message::Horus(HorusMessage {
                    header,
                    body: HorusBody::TaskFirst(t),
                })),
            ) = (src, Message::decode(data))
            else {
                continue;
            };
            let m = Message::Horus(HorusMessage {
                header: HorusHeader {
                    pool_id: header.pool_id,
                    src_id: header.dst_id,
                    seq: header.seq,
                    ..Default::default()
                },
                body: HorusBody::Reply(HorusReply {
                    task_id: t.task_id,
                    status: ReplyStatus::Ok,
                    payload: b"",
                }),
            });
            if let Ok(len) = m.encode(txb.next_buf()) {
                txb.commit(len, src, 0);
            }
        }
        txb.flush(&sock, |_, _| {});
        if n == 0 {
            net::wait_readable(&sock, Duration::from_millis(5));
        }
    }
}

fn loopback() -> UdpSocket {
    bound("127.0.0.1:0")
}

/// A socket bound to `addr` with the daemon's socket options.
pub(crate) fn bound(addr: &str) -> UdpSocket {
    let s = UdpSocket::bind(addr).unwrap_or_else(|e| panic!("bind {addr}: {e}"));
    net::prepare(&s).expect("socket options");
    s
}

/// Closed loop: keeps `window` tasks in flight through `target` for
/// `duration`; returns completed tasks and wall seconds. Batched like the
/// daemon, so the generator is not the bottleneck.
fn closed_loop(target: SocketAddr, window: usize, duration: Duration) -> (u64, f64) {
    closed_loop_from("127.0.0.1", target, window, duration)
}

/// [`closed_loop`] from a socket on `ip` (a namespace's address).
pub(crate) fn closed_loop_from(
    ip: &str,
    target: SocketAddr,
    window: usize,
    duration: Duration,
) -> (u64, f64) {
    let sock = bound(&format!("{ip}:0"));
    let mut txb = net::Mmsg::new(window.max(1), MAX_DATAGRAM);
    let mut rxb = net::Mmsg::new(64, 2048);
    let mut seq = 0u32;
    let mut inflight = 0usize;
    let mut done = 0u64;
    let start = Instant::now();
    while start.elapsed() < duration {
        while inflight < window && !txb.is_full() {
            let m = Message::Horus(HorusMessage::task_first(
                1,
                HorusTask {
                    task_id: task_id::new(9, seq),
                    is_last: true,
                    ..Default::default()
                },
            ));
            seq = seq.wrapping_add(1);
            let n = m.encode(txb.next_buf()).expect("encode");
            txb.commit(n, target, 0);
            inflight += 1;
        }
        let mut failed = 0;
        txb.flush(&sock, |_, ok| failed += usize::from(!ok));
        inflight -= failed;
        let got = rxb.recv(&sock).unwrap_or(0);
        if got == 0 {
            // A lost datagram would shrink the window for good; refill after
            // a quiet millisecond.
            if !net::wait_readable(&sock, Duration::from_millis(1)) {
                inflight = 0;
            }
        }
        inflight = inflight.saturating_sub(got);
        done += got as u64;
    }
    (done, start.elapsed().as_secs_f64())
}

fn daemon_config(role: BenchRole, policy: Policy, nodes: u32, echo: SocketAddr) -> SwitchConfig {
    SwitchConfig {
        listen: "127.0.0.1:0".into(),
        metrics: None,
        seed: 1,
        batch: 32,
        fail_replies: true,
        instances: vec![PoolConfig {
            pool: 1,
            role: match role {
                BenchRole::Leaf => Role::Leaf,
                BenchRole::Spine => Role::Spine,
            },
            policy,
            downstream: vec![echo; nodes as usize],
            rack_workers: Vec::new(),
            upstream: Vec::new(),
            rack: 0,
            heartbeat_timeout_ms: 0,
            clients: None,
            max_routes: netsched_node::config::DEFAULT_MAX_ROUTES,
            ..PoolConfig::new(1, Role::Leaf, Policy::Horus, Vec::new())
        }],
        ..Default::default()
    }
}

fn low_load(target: SocketAddr, rate: f64, dur: Duration) -> Result<(f64, f64), Error> {
    low_load_from("127.0.0.1", target, rate, dur)
}

/// [`low_load`] from `ip`: the open-loop client's p50 and p99, µs.
pub(crate) fn low_load_from(
    ip: &str,
    target: SocketAddr,
    rate: f64,
    dur: Duration,
) -> Result<(f64, f64), Error> {
    let cfg = ClientConfig {
        targets: vec![Target {
            addr: target,
            weight: 1.0,
        }],
        pool: 1,
        app_id: 77,
        rate,
        duration_ms: dur.as_millis() as u64,
        // The echo ignores service times; the sampler needs a positive one.
        service: netsched_config::workload::ServiceDist::Fixed { value_us: 1.0 },
        timeout_ms: 500,
        seed: 5,
        bind: format!("{ip}:0"),
        ..Default::default()
    };
    let mut c = Client::bind(cfg)?;
    let r = c.run();
    if r.completed == 0 {
        return Err(Error::NothingCompleted {
            summary: r.summary(),
        });
    }
    Ok((r.percentile_us(0.5), r.percentile_us(0.99)))
}

/// Runs both parts of the benchmark.
pub fn run(opts: &BenchOpts) -> Result<BenchResult, Error> {
    let stop = Arc::new(AtomicBool::new(false));
    let echo_sock = loopback();
    let echo_addr = echo_sock.local_addr()?;
    let e_stop = stop.clone();
    let echo_t = std::thread::spawn(move || echo(echo_sock, e_stop));
    let cfg = daemon_config(opts.role, opts.policy, opts.nodes, echo_addr);
    let mut d = SwitchDaemon::new(&cfg, loopback())?;
    let daemon_addr = d.local_addr();
    let d_stop = stop.clone();
    let cpu = Arc::new(AtomicU64::new(0));
    let cpu_w = cpu.clone();
    let measuring = Arc::new(AtomicBool::new(false));
    let measuring_r = measuring.clone();
    let daemon_t = std::thread::spawn(move || {
        let mut cpu_start = 0;
        let mut was = false;
        while !d_stop.load(Ordering::Relaxed) {
            let got = d.poll_batch().unwrap_or(0);
            let m = measuring_r.load(Ordering::Relaxed);
            if m && !was {
                cpu_start = net::thread_cpu_ns();
            } else if !m && was {
                cpu_w.store(net::thread_cpu_ns() - cpu_start, Ordering::Relaxed);
            }
            was = m;
            if got == 0 {
                d.wait(Duration::from_millis(5));
            }
        }
    });
    // Warm up, then measure.
    closed_loop(daemon_addr, opts.window, Duration::from_millis(200));
    measuring.store(true, Ordering::Relaxed);
    let (tasks, wall) = closed_loop(daemon_addr, opts.window, opts.duration);
    measuring.store(false, Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(50));
    let cpu_ns = cpu.load(Ordering::Relaxed).max(1);
    let lat = low_load(echo_addr, opts.low_rate, opts.latency_duration)
        .and_then(|d| low_load(daemon_addr, opts.low_rate, opts.latency_duration).map(|v| (d, v)));
    stop.store(true, Ordering::Relaxed);
    let _ = daemon_t.join();
    let _ = echo_t.join();
    let ((direct_p50, direct_p99), (via_p50, via_p99)) = lat?;
    Ok(BenchResult {
        tasks,
        wall_s: wall,
        tasks_per_s: tasks as f64 / wall,
        tasks_per_cpu_s: tasks as f64 / (cpu_ns as f64 / 1e9),
        daemon_cpu_share: cpu_ns as f64 / 1e9 / wall,
        direct_p50_us: direct_p50,
        direct_p99_us: direct_p99,
        via_p50_us: via_p50,
        via_p99_us: via_p99,
    })
}

/// A policy name as configs spell it (`netsched_core::registry::Policy`).
pub fn parse_policy(name: &str) -> Result<Policy, ConfigError> {
    Policy::parse(name).map_err(|e| ConfigError::Invalid(e.to_string()))
}
