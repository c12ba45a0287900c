//! `netsched bench xdp-e2e`: tasks per scheduler core and the latency a
//! scheduler adds, end to end through veth interfaces in network
//! namespaces, for the XDP leaf, the XDP spine, the socket daemon (leaf and
//! spine) and nginx's UDP proxy, in one run; and `xdp-leaf-live`, the XDP
//! leaf with a generator and workers that are XDP programs themselves
//! (`live`, its own namespace pair).
//!
//! The lab is three namespaces on a bridge (`netns::Lab`): `gen` (the
//! generator), `sched` (the scheduler under test) and `wrk` (the worker
//! endpoints: one batched echo socket that answers every task at once with
//! an idle reply, listed `workers` times). Each scheduler runs as its own
//! process (`netsched switch` through `ip netns exec`, which mounts the
//! namespace's sysfs, where the XDP daemon reads its interface's MAC; nginx
//! started from a thread inside the namespace). Tasks go from `gen` to the
//! scheduler, which forwards them to the echo; the echo's replies go back to
//! the scheduler (for XDP, the program updates its state and passes the
//! reply up to its daemon, which forwards it to the client by its reply
//! routes, docs/xdp.md), so every task crosses the scheduler twice.
//!
//! * Throughput: `generators` closed-loop threads in `gen` (batched
//!   sendmmsg/recvmmsg, `window` tasks in flight each). The scheduler's CPU
//!   is its process's user + system time plus, for XDP, the cpumap kernel
//!   thread that runs the program (its name is in the daemon's log); the
//!   steering program runs in the receiving CPU's softirq, which is not
//!   attributable to one process and is reported machine-wide beside it.
//! * Added latency: the open-loop client at `low_rate` straight to the echo
//!   (once) and through each scheduler; the difference of the medians.
//!
//! Native XDP on a veth: the program's own interface gets NAPI from the
//! program; a frame it sends back out (a redirect to that interface) is
//! received by the peer veth in the bridge namespace, which takes XDP
//! frames only with NAPI of its own, i.e. with GRO on (`Lab::native_xdp`;
//! kernel >= 5.13).

mod live;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bench::{bound, closed_loop_from, echo, low_load_from};
use crate::capacity::cpu_seconds;
use crate::error::Error;
use crate::netns::{Host, Lab, LabError};
use crate::nginx::Nginx;

/// The scheduler under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum System {
    XdpLeaf,
    /// The XDP leaf on every CPU (`[xdp] cpus = "all"`): no cpumap hop, its
    /// passes under the pass lock (docs/xdp.md, "Every CPU").
    XdpLeafAll,
    /// The XDP leaf between an XDP generator and XDP workers (`live`).
    XdpLeafLive,
    /// The same with the leaf on every CPU (`[xdp] cpus = "all"`).
    XdpLeafLiveAll,
    /// The live path with a program that sends every frame back in the
    /// leaf's place: the floor no scheduler on it can beat.
    XdpFloorLive,
    XdpSpine,
    SocketLeaf,
    SocketSpine,
    Nginx,
}

impl System {
    pub const ALL: [System; 9] = [
        System::XdpLeafLive,
        System::XdpLeafLiveAll,
        System::XdpFloorLive,
        System::XdpLeaf,
        System::XdpLeafAll,
        System::XdpSpine,
        System::SocketLeaf,
        System::SocketSpine,
        System::Nginx,
    ];

    pub fn name(self) -> &'static str {
        match self {
            System::XdpLeaf => "xdp-leaf",
            System::XdpLeafAll => "xdp-leaf-all",
            System::XdpLeafLive => "xdp-leaf-live",
            System::XdpLeafLiveAll => "xdp-leaf-live-all",
            System::XdpFloorLive => "xdp-floor-live",
            System::XdpSpine => "xdp-spine",
            System::SocketLeaf => "socket-leaf",
            System::SocketSpine => "socket-spine",
            System::Nginx => "nginx",
        }
    }

    fn xdp(self) -> bool {
        matches!(
            self,
            System::XdpLeaf
                | System::XdpLeafAll
                | System::XdpLeafLive
                | System::XdpLeafLiveAll
                | System::XdpSpine
        )
    }

    /// The XDP leaf on every CPU (`[xdp] cpus = "all"`).
    fn every_cpu(self) -> bool {
        matches!(self, System::XdpLeafAll | System::XdpLeafLiveAll)
    }

    /// Between an XDP generator and XDP workers (`live`).
    fn live(self) -> bool {
        matches!(
            self,
            System::XdpLeafLive | System::XdpLeafLiveAll | System::XdpFloorLive
        )
    }
}

#[derive(Clone, Debug)]
pub struct XdpE2eOpts {
    /// The `netsched` binary that runs `switch`.
    pub netsched: PathBuf,
    pub systems: Vec<System>,
    /// Worker entries (leaf) or racks of one worker (spine), all the echo.
    pub workers: usize,
    pub generators: usize,
    /// Tasks in flight per generator thread.
    pub window: usize,
    pub duration: Duration,
    pub low_rate: f64,
    pub latency_duration: Duration,
    /// XDP attach mode: "native" or "generic".
    pub mode: String,
    /// The CPU the XDP program runs on (`[xdp] cpu`).
    pub cpu: u32,
    pub nginx: PathBuf,
    pub nginx_module: PathBuf,
}

impl Default for XdpE2eOpts {
    fn default() -> Self {
        XdpE2eOpts {
            netsched: PathBuf::from("netsched"),
            systems: System::ALL.to_vec(),
            workers: 4,
            generators: 2,
            window: 128,
            duration: Duration::from_secs(2),
            low_rate: 1_000.0,
            latency_duration: Duration::from_secs(1),
            mode: "native".into(),
            cpu: 1,
            nginx: crate::nginx::DEFAULT_NGINX.into(),
            nginx_module: crate::nginx::DEFAULT_STREAM_MODULE.into(),
        }
    }
}

/// One system's figures.
#[derive(Clone, Debug)]
pub struct Row {
    pub system: System,
    pub tasks: u64,
    pub wall_s: f64,
    /// The scheduler's CPU seconds (process, plus the XDP cpumap thread).
    pub sched_cpu_s: f64,
    /// Machine-wide softirq seconds over the run (every CPU).
    pub softirq_s: f64,
    /// CPU seconds of the generator threads.
    pub gen_cpu_s: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// `xdp-leaf-live` and `xdp-leaf-live-all` only.
    pub live: Option<Live>,
}

/// What the live-frame run adds to a row.
#[derive(Clone, Debug)]
pub struct Live {
    /// Tasks the generator sent (the rest of `tasks` were lost).
    pub sent: u64,
    /// The leaf program's own mean run time per packet (a task or a
    /// reply), from the kernel's BPF run-time statistics.
    pub prog_ns_per_run: Option<f64>,
    /// The same for the steering program (one CPU only).
    pub steer_ns_per_run: Option<f64>,
    /// The scheduler's CPU (`Row::sched_cpu_s`) by where it ran: the
    /// daemon's process, the NAPI thread of the leaf's interface (its
    /// receive path: the steering program or, on every CPU, the leaf
    /// program, and the redirects out), and the cpumap thread (one CPU:
    /// the leaf program and its redirects).
    pub daemon_cpu_s: f64,
    pub napi_cpu_s: f64,
    pub cpumap_cpu_s: f64,
    /// Softirq seconds of the leaf's CPU (/proc/stat): receive work that
    /// ran outside those threads.
    pub leaf_cpu_softirq_s: f64,
    /// p50 with the responder answering in the leaf's place.
    pub direct_p50_us: f64,
    /// Where frames went during the throughput run: packets the leaf's
    /// steering took and the leaf ran (its daemon's
    /// `netsched_xdp_cpu_packets_total`), and the responder's (the
    /// differences were dropped at the cpumap queues).
    pub leaf_steered: u64,
    pub leaf_ran: u64,
    pub responder_steered: u64,
    pub responder_ran: u64,
    /// Replies the leaf program sent on itself (its `replies_forwarded`).
    pub replies_forwarded: u64,
    /// Tasks the leaf program dispatched and replies it took (its
    /// `dispatch_*` and `replies` counters).
    pub dispatched: u64,
    pub replies: u64,
    /// Tasks the responder answered (as the workers).
    pub answered: u64,
}

impl Row {
    pub fn tasks_per_s(&self) -> f64 {
        self.tasks as f64 / self.wall_s.max(1e-9)
    }

    /// Tasks per second of scheduler CPU: per scheduler core.
    pub fn tasks_per_core_s(&self) -> f64 {
        self.tasks as f64 / self.sched_cpu_s.max(0.01)
    }

    pub const HEADER: &'static str = "| system | tasks/s | scheduler CPU share | tasks per scheduler CPU-second | machine softirq µs/task | generator CPU share | generated tasks/s | loss | leaf program ns/packet | p50 µs | p99 µs | added p50 µs |\n|---|---|---|---|---|---|---|---|---|---|---|---|";

    pub fn line(&self, direct_p50: f64) -> String {
        let (generated, loss, prog, direct_p50) = match &self.live {
            Some(l) => (
                format!("{:.0}", l.sent as f64 / self.wall_s.max(1e-9)),
                format!(
                    "{:.1} %",
                    100.0 * l.sent.saturating_sub(self.tasks) as f64 / l.sent.max(1) as f64
                ),
                match (l.prog_ns_per_run, l.steer_ns_per_run) {
                    (Some(ns), Some(steer)) => format!("{ns:.0} (+ steering {steer:.0})"),
                    (Some(ns), None) => format!("{ns:.0}"),
                    _ => "-".to_string(),
                },
                l.direct_p50_us,
            ),
            None => ("-".into(), "-".into(), "-".into(), direct_p50),
        };
        format!(
            "| {} | {:.0} | {:.2} | {:.0} | {:.2} | {:.2} | {generated} | {loss} | {prog} | {:.1} | {:.1} | {:.1} |",
            self.system.name(),
            self.tasks_per_s(),
            self.sched_cpu_s / self.wall_s,
            self.tasks_per_core_s(),
            self.softirq_s * 1e6 / (self.tasks.max(1) as f64),
            self.gen_cpu_s / self.wall_s,
            self.p50_us,
            self.p99_us,
            self.p50_us - direct_p50
        )
    }
}

/// The run's result: the rows and the direct-to-echo latency.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub direct_p50_us: f64,
    pub direct_p99_us: f64,
    pub rows: Vec<Row>,
}

pub(crate) const SCHED_PORT: u16 = 7101;
pub(crate) const ECHO_PORT: u16 = 7201;
pub(crate) const METRICS_PORT: u16 = 7400;

pub(crate) fn lab_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::io(what, std::io::Error::other(e.to_string()))
}

/// Machine-wide softirq time, seconds (/proc/stat's `cpu` line).
pub(crate) fn softirq_s() -> f64 {
    cpu_softirq_s("cpu")
}

/// Softirq time of /proc/stat's line `cpu` ("cpu": every CPU, "cpu1":
/// CPU 1), seconds.
pub(crate) fn cpu_softirq_s(cpu: &str) -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: f64 = stat
        .lines()
        .find(|l| l.split_whitespace().next() == Some(cpu))
        .and_then(|l| l.split_whitespace().nth(7)?.parse().ok())
        .unwrap_or(0.0);
    // SAFETY: sysconf has no preconditions.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64
}

/// The pid of the kernel thread named `name` (the cpumap thread).
pub(crate) fn kernel_thread(name: &str) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
        (comm.trim_end() == name).then(|| e.file_name().to_str()?.parse().ok())?
    })
}

/// A running scheduler: a `netsched switch` process or nginx.
pub(crate) enum Running {
    Switch { child: Child, log: PathBuf },
    Nginx(Nginx),
}

impl Running {
    fn pid(&self) -> u32 {
        match self {
            Running::Switch { child, .. } => child.id(),
            Running::Nginx(n) => n.pid(),
        }
    }

    /// The daemon's log (a `netsched switch` process).
    pub(crate) fn log(&self) -> Option<&Path> {
        match self {
            Running::Switch { log, .. } => Some(log),
            Running::Nginx(_) => None,
        }
    }

    /// The stat files whose CPU time is the scheduler's.
    pub(crate) fn stat_paths(&self) -> Vec<PathBuf> {
        let mut v = vec![PathBuf::from(format!("/proc/{}/stat", self.pid()))];
        if let Running::Switch { log, .. } = self {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let thread = text
                .split_whitespace()
                .find_map(|w| w.strip_prefix("thread="))
                .and_then(kernel_thread);
            if let Some(tid) = thread {
                v.push(PathBuf::from(format!("/proc/{tid}/stat")));
            }
        }
        v
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Running::Switch { child, .. } = self {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn sched_config(opts: &XdpE2eOpts, system: System, sched: &Host, echo_at: &str) -> String {
    let listen = sched.at(SCHED_PORT);
    let metrics = sched.at(METRICS_PORT);
    let xdp = if system.xdp() {
        format!(
            "datapath = \"xdp\"\n\n[xdp]\ninterface = \"eth0\"\nmode = \"{}\"\ncpu = {}\ncpus = \"{}\"\n",
            opts.mode,
            opts.cpu,
            if system.every_cpu() { "all" } else { "one" }
        )
    } else {
        String::new()
    };
    let downstream = vec![format!("\"{echo_at}\""); opts.workers].join(", ");
    let (role, racks) = match system {
        System::XdpSpine | System::SocketSpine => (
            "spine",
            format!("rack_workers = [{}]\n", vec!["1"; opts.workers].join(", ")),
        ),
        _ => ("leaf", String::new()),
    };
    format!(
        "listen = \"{listen}\"\nmetrics = \"{metrics}\"\nseed = 1\n{xdp}\n\
         [[instance]]\npool = 1\nrole = \"{role}\"\npolicy = \"horus\"\n\
         downstream = [{downstream}]\n{racks}"
    )
}

/// Starts `system` in `sched` and waits until it serves.
pub(crate) fn start(
    opts: &XdpE2eOpts,
    system: System,
    sched: &Host,
    echo_at: &str,
    dir: &Path,
) -> Result<Running, Error> {
    if system == System::Nginx {
        let (bin, module) = (opts.nginx.clone(), opts.nginx_module.clone());
        let listen: SocketAddr = sched.at(SCHED_PORT).parse().expect("an address");
        let upstreams = vec![echo_at.parse().expect("an address"); opts.workers];
        let nginx = sched
            .run(move || Nginx::start_at(&bin, &module, listen, &upstreams))
            .map_err(|e| lab_err("nginx in its namespace", e))??;
        return Ok(Running::Nginx(nginx));
    }
    let cfg = dir.join(format!("{}.toml", system.name()));
    std::fs::write(&cfg, sched_config(opts, system, sched, echo_at))
        .map_err(|e| Error::io(cfg.display(), e))?;
    let log = dir.join(format!("{}.log", system.name()));
    let out = std::fs::File::create(&log).map_err(|e| Error::io(log.display(), e))?;
    let child = Command::new("ip")
        .args(["netns", "exec", &sched.name])
        .arg(&opts.netsched)
        .arg("switch")
        .arg("-c")
        .arg(&cfg)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .map_err(|e| Error::io("ip netns exec", e))?;
    let mut running = Running::Switch {
        child,
        log: log.clone(),
    };
    // Serving once /metrics answers (for XDP, with the program's counters:
    // it answers after the attach).
    let addr: SocketAddr = sched.at(METRICS_PORT).parse().expect("an address");
    let want = if system.xdp() {
        "netsched_xdp_events_total"
    } else {
        "netsched_rx_packets_total"
    };
    let t = Instant::now();
    loop {
        if let Running::Switch { child, .. } = &mut running {
            if let Ok(Some(status)) = child.try_wait() {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                return Err(lab_err(
                    system.name(),
                    format!("exited ({status}): {}", text.trim()),
                ));
            }
        }
        let body = sched
            .run(move || netsched_node::controller::http(addr, "GET", "/metrics", None, None))
            .ok()
            .and_then(|r| r.ok());
        if body.is_some_and(|(code, b)| code == 200 && b.contains(want)) {
            return Ok(running);
        }
        if t.elapsed() > Duration::from_secs(20) {
            return Err(lab_err(system.name(), "did not serve within 20 s"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `generators` closed loops from `gen` to `target` for `duration`:
/// (tasks, wall seconds, generator CPU seconds).
fn drive(opts: &XdpE2eOpts, gen: &Host, target: SocketAddr, duration: Duration) -> (u64, f64, f64) {
    let ip = gen.addr.to_string();
    let handles: Vec<_> = (0..opts.generators)
        .map(|_| {
            let (ip, window) = (ip.clone(), opts.window);
            gen.spawn(move || {
                let cpu0 = netsched_node::net::thread_cpu_ns();
                let (done, wall) = closed_loop_from(&ip, target, window, duration);
                (done, wall, netsched_node::net::thread_cpu_ns() - cpu0)
            })
        })
        .collect();
    let mut out = (0, 0.0f64, 0.0);
    for h in handles {
        if let Ok(Ok((done, wall, cpu))) = h.join() {
            out.0 += done;
            out.1 = out.1.max(wall);
            out.2 += cpu as f64 / 1e9;
        }
    }
    out
}

fn measure(
    opts: &XdpE2eOpts,
    system: System,
    gen: &Host,
    sched: &Host,
    echo_at: &str,
    dir: &Path,
) -> Result<Row, Error> {
    let running = start(opts, system, sched, echo_at, dir)?;
    let target: SocketAddr = sched.at(SCHED_PORT).parse().expect("an address");
    // Warm up (ARP, routes, the program's first decisions).
    drive(opts, gen, target, Duration::from_millis(200));
    let stats = running.stat_paths();
    let cpu =
        |paths: &[PathBuf]| -> Result<f64, Error> { paths.iter().map(|p| cpu_seconds(p)).sum() };
    let (cpu0, soft0) = (cpu(&stats)?, softirq_s());
    let (tasks, wall_s, gen_cpu_s) = drive(opts, gen, target, opts.duration);
    let (cpu1, soft1) = (cpu(&stats)?, softirq_s());
    let ip = gen.addr.to_string();
    let (rate, dur) = (opts.low_rate, opts.latency_duration);
    let (p50_us, p99_us) = gen
        .run(move || low_load_from(&ip, target, rate, dur))
        .map_err(|e| lab_err("latency client", e))??;
    drop(running);
    if tasks == 0 {
        return Err(Error::NothingCompleted {
            summary: format!("{}: no task completed end to end", system.name()),
        });
    }
    Ok(Row {
        system,
        tasks,
        wall_s,
        sched_cpu_s: cpu1 - cpu0,
        softirq_s: soft1 - soft0,
        gen_cpu_s,
        p50_us,
        p99_us,
        live: None,
    })
}

/// Runs every system of `opts` in one lab; `progress` sees each row.
pub fn run(opts: &XdpE2eOpts, mut progress: impl FnMut(&Row)) -> Result<Outcome, Error> {
    let mut lab =
        Lab::new("xe2e").map_err(|e: LabError| lab_err("network namespaces (run as root)", e))?;
    let host = |lab: &mut Lab, name| lab.host(name).map_err(|e| lab_err("namespace", e));
    let gen = host(&mut lab, "gen")?;
    let sched = host(&mut lab, "sched")?;
    let wrk = host(&mut lab, "wrk")?;
    if opts.mode == "native" {
        // The bridge-side peer of the scheduler's veth takes the frames the
        // program sends back out; the replies it passes up carry full
        // checksums (module doc).
        lab.native_xdp(&sched, &[&wrk])
            .map_err(|e| lab_err("native XDP on the veths", e))?;
    }
    let dir = std::env::temp_dir().join(format!("netsched-xdp-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), e))?;
    let echo_at = wrk.at(ECHO_PORT);
    let stop = Arc::new(AtomicBool::new(false));
    let (stop_e, at) = (stop.clone(), echo_at.clone());
    let echo_t = wrk.spawn(move || echo(bound(&at), stop_e));
    let result = (|| {
        let echo_addr: SocketAddr = echo_at.parse().expect("an address");
        let ip = gen.addr.to_string();
        let (rate, dur) = (opts.low_rate, opts.latency_duration);
        // ARP first, so the first latency sample does not wait for it.
        drive(opts, &gen, echo_addr, Duration::from_millis(100));
        let (direct_p50_us, direct_p99_us) = gen
            .run(move || low_load_from(&ip, echo_addr, rate, dur))
            .map_err(|e| lab_err("latency client", e))??;
        let mut rows = Vec::new();
        for &system in &opts.systems {
            let row = if system.live() {
                live::measure(opts, system, &dir)?
            } else {
                measure(opts, system, &gen, &sched, &echo_at, &dir)?
            };
            progress(&row);
            rows.push(row);
        }
        Ok(Outcome {
            direct_p50_us,
            direct_p99_us,
            rows,
        })
    })();
    stop.store(true, Ordering::Relaxed);
    let _ = echo_t.join();
    if result.is_ok() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    drop(lab);
    result
}
