//! `netsched bench xdp-e2e` with systems `xdp-leaf-live` and
//! `xdp-leaf-live-all`: the XDP leaf end to end with no user space on the
//! data path. `netsched switch` runs the leaf (`datapath = "xdp"`, native
//! mode by default, replies forwarded by the program; serialised on `[xdp]
//! cpu` through the cpumap, or with `-all` on every CPU, `cpus = "all"`) in
//! `sched`, whose `eth0` is one end of a veth pair; the other end, in `gen`,
//! carries both the generator and the workers
//! (crates/xdp/bpf/traffic.bpf.c):
//!
//! * the generator is `BPF_PROG_TEST_RUN` with live frames: a pre-built
//!   task frame sent out of `gen`'s eth0 in batches, each stamped with its
//!   send time, as fast as the kernel takes them (open loop);
//! * the workers (`workers` entries, one address, all in `gen`) are the
//!   responder program on that eth0, which turns each task the leaf sends
//!   there into its idle reply and sends it back; the leaf forwards the
//!   reply to the client, which is the same responder: it completes the
//!   task, timing it from the stamp.
//!
//! Both ends' receive paths run in kernel threads of their own, threaded
//! NAPI (`threaded_napi`), not in the softirq of whichever CPU sent the
//! frame: `sched`'s on `[xdp] cpu` (real-time, as the daemon makes its
//! cpumap thread), `gen`'s on the other CPU, where the responder runs
//! serialised (bpf/steer.h) and the generating thread is pinned too. So the
//! leaf's CPU runs the leaf's path and nothing else of the benchmark's, and
//! the scheduler's CPU is what its threads ran: the daemon's process, the
//! NAPI thread of `sched`'s eth0 (the veth's receive, the program attached
//! there, the redirects out and the transmit into the peer's ring: with
//! one CPU the steering program, on every CPU the leaf itself) and, with
//! one CPU, the cpumap thread (the leaf program and its redirects). With a
//! single receive queue the leaf on every CPU runs on that one NAPI thread:
//! on this 2-core lab the other core is the generator's and the workers'.
//! Figures: completed tasks per second; tasks per scheduler CPU-second; the
//! leaf program's own run time per packet (and the steering program's)
//! from the kernel's BPF run-time statistics (`BPF_ENABLE_STATS`), in a
//! shorter run of its own after the throughput run (statistics on, every
//! program run reads the clock twice more, so the throughput run has them
//! off); the leaf CPU's softirq time (receive work outside those
//! threads); the generator's rate and the loss (sent − completed, dropped
//! where a queue was full); and the latency at `low_rate` through the leaf
//! and, for the latency the leaf adds, with the responder answering on
//! `sched`'s eth0 in the leaf's place (the same hops, no scheduling).

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use netsched_xdp::traffic::{self, Traffic, TrafficStats};
use netsched_xdp::{XdpError, XdpFlags};

use super::{self as xdp_e2e, cpu_softirq_s, lab_err, softirq_s, Row, System, XdpE2eOpts};
use crate::capacity::cpu_seconds;
use crate::error::Error;
use crate::netns::{Host, Lab};

const CLIENT_PORT: u16 = 6000;
/// Frames per live test run: a run's syscall is the generator's only
/// per-batch cost, and it is dear (tens of ms on this machine: the run
/// sets up and tears down its page pool), so batches are large and the
/// generator an open loop.
const BATCH: u32 = 1 << 16;

/// The generator's task ([`traffic::generator_task`]) in its frame.
fn task_frame(gen: &Host, gen_mac: [u8; 6], sched: &Host, sched_mac: [u8; 6]) -> Vec<u8> {
    let datagram = traffic::generator_task();
    udp_frame(
        (gen_mac, gen.addr, CLIENT_PORT),
        (sched_mac, sched.addr, xdp_e2e::SCHED_PORT),
        &datagram,
    )
}

/// Ethernet + IPv4 (checksummed) + UDP (no checksum) around `payload`.
fn udp_frame(
    from: ([u8; 6], Ipv4Addr, u16),
    to: ([u8; 6], Ipv4Addr, u16),
    payload: &[u8],
) -> Vec<u8> {
    let mut f = Vec::with_capacity(42 + payload.len());
    f.extend_from_slice(&to.0);
    f.extend_from_slice(&from.0);
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((28 + payload.len()) as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&from.1.octets());
    ip[16..20].copy_from_slice(&to.1.octets());
    let mut sum: u32 = ip
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&from.2.to_be_bytes());
    f.extend_from_slice(&to.2.to_be_bytes());
    f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}

/// Pins the calling thread to `cpu`.
fn pin(cpu: u32) {
    pin_task(0, cpu);
}

/// Pins task `tid` (0: the calling thread) to `cpu`.
fn pin_task(tid: u32, cpu: u32) -> bool {
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET stays within it for
    // cpu < CPU_SETSIZE; sched_setaffinity affects only task `tid`.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        libc::sched_setaffinity(tid as i32, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// The NAPI threads of interfaces named eth0 (`napi/eth0-<id>`).
fn napi_threads() -> BTreeSet<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return BTreeSet::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            comm.starts_with("napi/eth0-")
                .then(|| e.file_name().to_str()?.parse().ok())?
        })
        .collect()
}

/// Turns on threaded NAPI for `host`'s eth0 (`/sys/class/net/eth0/threaded`
/// through `ip netns exec`, which mounts the namespace's sysfs): its
/// receive path, the XDP program attached there included, then runs in a
/// kernel thread of its own, which is pinned to `cpu` and made SCHED_FIFO
/// at `realtime_priority` if above 0. Returns the thread's pid. A veth has
/// NAPI once an XDP program is attached: call it after the attach.
fn threaded_napi(host: &Host, cpu: u32, realtime_priority: u8) -> Result<u32, Error> {
    let before = napi_threads();
    let what = format!("threaded NAPI on {}'s eth0", host.name);
    let status = Command::new("ip")
        .args(["netns", "exec", &host.name, "sh", "-c"])
        .arg("echo 1 > /sys/class/net/eth0/threaded")
        .status()
        .map_err(|e| Error::io(&what, e))?;
    if !status.success() {
        return Err(lab_err(&what, status));
    }
    let t = Instant::now();
    let tid = loop {
        if let Some(&tid) = napi_threads().difference(&before).next() {
            break tid;
        }
        if t.elapsed() > Duration::from_secs(2) {
            return Err(lab_err(&what, "no napi/eth0 thread appeared"));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    if !pin_task(tid, cpu) {
        return Err(Error::io(&what, std::io::Error::last_os_error()));
    }
    if realtime_priority > 0 {
        let param = libc::sched_param {
            sched_priority: i32::from(realtime_priority),
        };
        // SAFETY: `param` is a valid sched_param for the call's duration.
        if unsafe { libc::sched_setscheduler(tid as i32, libc::SCHED_FIFO, &param) } != 0 {
            return Err(Error::io(&what, std::io::Error::last_os_error()));
        }
    }
    Ok(tid)
}

/// CPU seconds task `tid` has run (/proc/<tid>/schedstat, nanoseconds).
fn task_cpu_s(tid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{tid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0.0, |ns| ns as f64 / 1e9)
}

/// The id of the XDP program attached to `host`'s eth0 (`ip link`'s
/// `prog/xdp id N`).
fn attached_program(host: &Host) -> Option<u32> {
    let out = Command::new("ip")
        .args(["-n", &host.name, "link", "show", "eth0"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split("prog/xdp id ")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Mean ns per run between two `(run_time_ns, run_count)` readings.
fn ns_per_run(before: Option<(u64, u64)>, after: Option<(u64, u64)>) -> Option<f64> {
    match (before, after) {
        (Some((t0, n0)), Some((t1, n1))) if n1 > n0 => Some((t1 - t0) as f64 / (n1 - n0) as f64),
        _ => None,
    }
}

fn ifindex(name: &str) -> u32 {
    let name = std::ffi::CString::new(name).expect("no NUL");
    // SAFETY: a valid NUL-terminated name.
    unsafe { libc::if_nametoindex(name.as_ptr()) }
}

fn xdp_err(what: &str) -> impl Fn(XdpError) -> Error + '_ {
    move |e| lab_err(what, e)
}

/// Sends one task every `1 / rate` s for `duration` from `gen` and returns
/// what the responder counted meanwhile (the latency at low load).
fn paced(
    gen: &Host,
    mut traffic: Traffic,
    frame: Vec<u8>,
    rate: f64,
    duration: Duration,
    cpu: u32,
) -> Result<(Traffic, TrafficStats), Error> {
    gen.run(move || {
        pin(cpu);
        let eth0 = ifindex("eth0");
        let before = traffic.stats()?;
        let gap = Duration::from_secs_f64(1.0 / rate.max(1.0));
        let start = Instant::now();
        let mut next = start;
        while start.elapsed() < duration {
            traffic.send(&frame, 1, eth0)?;
            next += gap;
            if let Some(wait) = next.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
        let after = traffic.stats()?.since(&before);
        Ok((traffic, after))
    })
    .map_err(|e| lab_err("generator namespace", e))?
    .map_err(xdp_err("live generator"))
}

/// The cpumap map id in the leaf daemon's log (`thread=cpumap/<cpu>/map:<id>`).
fn cpumap_id(log: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(log).ok()?;
    text.split_whitespace()
        .find_map(|w| w.strip_prefix("thread="))?
        .rsplit("map:")
        .next()?
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .ok()
}

/// (steered, ran, replies the program forwarded, tasks it dispatched,
/// replies it took) packets of the leaf so far, from its daemon's metrics.
fn leaf_packets(sched: &Host) -> (u64, u64, u64, u64, u64) {
    let addr = sched.at(xdp_e2e::METRICS_PORT).parse().expect("an address");
    let body = sched
        .run(move || netsched_node::controller::http(addr, "GET", "/metrics", None, None))
        .ok()
        .and_then(|r| r.ok())
        .map(|(_, b)| b)
        .unwrap_or_default();
    let mut out = (0, 0, 0, 0, 0);
    let value = |line: &str| -> u64 {
        line.rsplit(' ')
            .next()
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0) as u64
    };
    for line in body.lines() {
        if let Some(event) = line.strip_prefix("netsched_xdp_events_total{event=\"") {
            if event.starts_with("replies_forwarded\"") {
                out.2 += value(line);
            } else if event.starts_with("dispatch_") {
                out.3 += value(line);
            } else if event.starts_with("replies\"") {
                out.4 += value(line);
            }
        }
        let Some(rest) = line.strip_prefix("netsched_xdp_cpu_packets_total{") else {
            continue;
        };
        let value = value(rest);
        if rest.contains("program=\"steer\"") {
            out.0 += value;
        } else {
            out.1 += value;
        }
    }
    out
}

/// Packets `t`'s steering took and its program (the responder or the
/// floor) ran, summed over CPUs.
fn resp_runs_of(t: &Traffic) -> (u64, u64) {
    t.runs_on()
        .map(|r| {
            (
                r.steered.iter().sum::<u64>(),
                r.scheduler.iter().sum::<u64>(),
            )
        })
        .unwrap_or_default()
}

/// What one open-loop run of the generator did.
struct Blast {
    /// Tasks sent.
    sent: u64,
    wall_s: f64,
    /// The generating thread's CPU seconds.
    gen_cpu_s: f64,
    /// What the responder counted, in-flight tasks landed.
    total: TrafficStats,
}

/// The statistics-on run: a quarter of the throughput run (at least one
/// batch).
fn stats_duration(duration: Duration) -> Duration {
    duration / 4
}

/// Sends batches of `frame` from `gen` on `cpu` as fast as the kernel takes
/// them for `duration` (open loop).
fn blast(
    gen: &Host,
    traffic: Traffic,
    frame: Vec<u8>,
    duration: Duration,
    cpu: u32,
) -> Result<(Traffic, Blast), Error> {
    gen.run(move || -> Result<_, XdpError> {
        let mut traffic = traffic;
        pin(cpu);
        let eth0 = ifindex("eth0");
        let before = traffic.stats()?;
        let cpu0 = netsched_node::net::thread_cpu_ns();
        let start = Instant::now();
        let mut sent = 0u64;
        while start.elapsed() < duration {
            traffic.send(&frame, BATCH, eth0)?;
            sent += u64::from(BATCH);
        }
        let wall_s = start.elapsed().as_secs_f64();
        let gen_cpu_s = (netsched_node::net::thread_cpu_ns() - cpu0) as f64 / 1e9;
        // What is still in flight lands.
        std::thread::sleep(Duration::from_millis(100));
        let total = traffic.stats()?.since(&before);
        let blast = Blast {
            sent,
            wall_s,
            gen_cpu_s,
            total,
        };
        Ok((traffic, blast))
    })
    .map_err(|e| lab_err("generator namespace", e))?
    .map_err(xdp_err("live generator"))
}

/// `system`: `XdpLeafLive` (one CPU) or `XdpLeafLiveAll` (every CPU).
pub(crate) fn measure(opts: &XdpE2eOpts, system: System, dir: &Path) -> Result<Row, Error> {
    let mut lab = Lab::new("xliv").map_err(|e| lab_err("network namespaces (run as root)", e))?;
    let (gen, sched) = lab
        .pair("gen", "sched")
        .map_err(|e| lab_err("namespace pair", e))?;
    let flags = if opts.mode == "native" {
        XdpFlags::DRV_MODE
    } else {
        XdpFlags::SKB_MODE
    };
    // The generator and the responder on the CPU the leaf is not on.
    let other = u32::from(opts.cpu == 0);
    // In native mode gen's receive runs in its own NAPI thread on that
    // CPU (module doc), which runs the responder directly; in generic mode
    // it runs in softirqs, and the responder is steered to that CPU.
    let threaded = opts.mode == "native";
    let traffic = gen
        .run(move || -> Result<Traffic, XdpError> {
            let mut t = Traffic::load()?;
            if threaded {
                t.attach_responder_direct("eth0", flags)?;
            } else {
                t.attach_responder("eth0", flags, other, 0)?;
            }
            Ok(t)
        })
        .map_err(|e| lab_err("generator namespace", e))?
        .map_err(xdp_err("the responder"))?;
    // Real-time as the leaf's threads are: on this shared machine an
    // ordinary thread waits out other processes' time slices (ms), which
    // a closed loop would measure instead of the path.
    if threaded {
        threaded_napi(&gen, other, 1)?;
    }
    let mac = |h: &Host| h.mac().map_err(|e| lab_err("MAC", e));
    let frame = task_frame(&gen, mac(&gen)?, &sched, mac(&sched)?);
    let workers_at = gen.at(xdp_e2e::ECHO_PORT);
    // The leaf's daemon, or in its place the path's floor (a program that
    // sends every frame back, Traffic::attach_floor) and no daemon.
    let (running, floor) = if system == System::XdpFloorLive {
        let floor = sched
            .run(move || -> Result<Traffic, XdpError> {
                let mut t = Traffic::load()?;
                t.attach_floor("eth0", flags)?;
                Ok(t)
            })
            .map_err(|e| lab_err("scheduler namespace", e))?
            .map_err(xdp_err("the path's floor"))?;
        (None, Some(floor))
    } else {
        let running = xdp_e2e::start(opts, system, &sched, &workers_at, dir)?;
        (Some(running), None)
    };
    let log = running.as_ref().and_then(|r| r.log());
    // Real-time as the daemon's cpumap thread is (its default
    // `realtime_priority = 1`).
    let napi = if threaded {
        Some(threaded_napi(&sched, opts.cpu, 1)?)
    } else {
        None
    };
    // Warm up: the first task teaches the leaf the application's route.
    let (traffic, warm) = paced(
        &gen,
        traffic,
        frame.clone(),
        1_000.0,
        Duration::from_millis(100),
        other,
    )?;
    if warm.completed == 0 {
        let log = std::fs::read_to_string(log.unwrap_or(dir)).unwrap_or_default();
        return Err(Error::NothingCompleted {
            summary: format!(
                "{}: no task came back through the leaf ({warm:?}); daemon log: {}",
                system.name(),
                log.trim()
            ),
        });
    }
    let (traffic, low) = paced(
        &gen,
        traffic,
        frame.clone(),
        opts.low_rate,
        opts.latency_duration,
        other,
    )?;

    // Throughput: open loop, as fast as live frames go, with the kernel's
    // BPF run-time statistics off: on, every program run reads the clock
    // twice more (pvclock in a VM, tens of ns each), which the path would
    // carry. The leaf program's own run time comes from a shorter run of
    // its own afterwards, with them on.
    let paths = running.as_ref().map(|r| r.stat_paths()).unwrap_or_default();
    // The daemon's process (ticks, every thread) and the cpumap thread,
    // then the NAPI thread (ns).
    let cpu = |paths: &[std::path::PathBuf]| -> Result<(f64, f64, f64), Error> {
        let daemon = paths.first().map_or(Ok(0.0), |p| cpu_seconds(p))?;
        let cpumap = paths
            .iter()
            .skip(1)
            .map(|p| cpu_seconds(p))
            .sum::<Result<f64, _>>()?;
        Ok((daemon, cpumap, napi.map_or(0.0, task_cpu_s)))
    };
    let leaf_cpu = format!("cpu{}", opts.cpu);
    // The floor counts its runs itself (no daemon publishes them).
    let leaf_runs = || match &floor {
        Some(f) => (0, resp_runs_of(f).1, 0, 0, 0),
        None => leaf_packets(&sched),
    };
    let resp_runs = resp_runs_of;
    let (leaf0, resp0) = (leaf_runs(), resp_runs(&traffic));
    let (cpu0, soft0) = (cpu(&paths)?, softirq_s());
    let leaf_soft0 = cpu_softirq_s(&leaf_cpu);
    let (traffic, run) = blast(&gen, traffic, frame.clone(), opts.duration, other)?;
    let (cpu1, soft1) = (cpu(&paths)?, softirq_s());
    let leaf_soft1 = cpu_softirq_s(&leaf_cpu);
    // The daemon publishes its counters every 100 ms.
    std::thread::sleep(Duration::from_millis(250));
    let (leaf1, resp1) = (leaf_runs(), resp_runs(&traffic));

    // The programs' run time per packet, statistics on.
    let stats_on = traffic::enable_run_time_stats().map_err(xdp_err("bpf stats"))?;
    let map_id = log.and_then(cpumap_id);
    let attached = attached_program(&sched);
    // The leaf program: the cpumap entry's (one CPU) or the attached one
    // (every CPU, no cpumap); the steering program is the attached one.
    let runs = || {
        let cpumap = map_id.and_then(|id| traffic::cpumap_program_runs(id, opts.cpu).ok());
        let direct = attached.and_then(|id| traffic::program_runs(id).ok());
        match cpumap {
            Some(leaf) => (Some(leaf), direct),
            None => (direct, None),
        }
    };
    let runs0 = runs();
    let (traffic, _) = blast(
        &gen,
        traffic,
        frame.clone(),
        stats_duration(opts.duration),
        other,
    )?;
    let runs1 = runs();
    drop(stats_on);
    drop(running);
    drop(floor);

    // The same hops without the leaf: the responder answers on `sched`,
    // on the leaf's CPU and real-time as the leaf's thread is (the daemon's
    // default `realtime_priority = 1`).
    let sched_cpu = opts.cpu;
    let reflector = sched
        .run(move || -> Result<Traffic, XdpError> {
            let mut t = Traffic::load()?;
            t.attach_responder("eth0", flags, sched_cpu, 1)?;
            Ok(t)
        })
        .map_err(|e| lab_err("scheduler namespace", e))?
        .map_err(xdp_err("the responder in the leaf's place"))?;
    let (traffic, direct) = paced(
        &gen,
        traffic,
        frame,
        opts.low_rate,
        opts.latency_duration,
        other,
    )?;
    drop(reflector);
    drop(traffic);
    drop(lab);

    let us = |s: &TrafficStats, q| s.quantile_us(q).map_or(f64::NAN, |v| v as f64);
    let (daemon_cpu_s, cpumap_cpu_s, napi_cpu_s) =
        (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1, cpu1.2 - cpu0.2);
    let Blast {
        sent,
        wall_s,
        gen_cpu_s,
        total,
    } = run;
    Ok(Row {
        system,
        tasks: total.completed,
        wall_s,
        sched_cpu_s: daemon_cpu_s + cpumap_cpu_s + napi_cpu_s,
        softirq_s: soft1 - soft0,
        gen_cpu_s,
        p50_us: us(&low, 0.5),
        p99_us: us(&low, 0.99),
        live: Some(super::Live {
            sent,
            prog_ns_per_run: ns_per_run(runs0.0, runs1.0),
            steer_ns_per_run: ns_per_run(runs0.1, runs1.1),
            daemon_cpu_s,
            napi_cpu_s,
            cpumap_cpu_s,
            leaf_cpu_softirq_s: leaf_soft1 - leaf_soft0,
            direct_p50_us: us(&direct, 0.5),
            leaf_steered: leaf1.0 - leaf0.0,
            leaf_ran: leaf1.1 - leaf0.1,
            responder_steered: resp1.0 - resp0.0,
            responder_ran: resp1.1 - resp0.1,
            replies_forwarded: leaf1.2 - leaf0.2,
            dispatched: leaf1.3 - leaf0.3,
            replies: leaf1.4 - leaf0.4,
            answered: total.answered,
        }),
    })
}
